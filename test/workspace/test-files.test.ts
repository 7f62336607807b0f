import { existsSync, lstatSync } from 'node:fs';
import { mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { TestFilesChangedError } from '../../src/ports/workspace.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

const TEST_PATHS = ['test/**', '**/*.test.*'];
const BASE_FILES = {
  'src/a.js': 'export const a = 1;\n',
  'test/a.test.js': 'a test\n',
  'test/b.test.js': 'b test\n',
  'test/-x[a].test.js': 'odd name\n',
  'test/n\nl.test.js': 'newline in the name\n',
};

async function setup(files: Record<string, string> = BASE_FILES) {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'), files);
  const make = (dir = join(root, 'ws')) =>
    new GitWorkspace({ remote: repo.bare, dir, goalId: 'g1', branch: 'goal/g1', protectedPaths: [], identity: { name: 'goal-loop', email: 'bot@example.com' }, syncIntervalMs: 0 });
  const ws = make();
  await ws.prepare();
  return { root, repo, ws, make };
}

/** A checkpoint input; `null`: without test paths. */
const input = (taskId: string, testPaths: readonly string[] | null = TEST_PATHS) => ({ goalId: 'g1', taskId, title: taskId, attempt: 1, ...(testPaths ? { testPaths } : {}) });

/** The refusal's files, or a failure when the checkpoint went through. */
async function refusal(ws: GitWorkspace, taskId: string): Promise<TestFilesChangedError['files']> {
  const err = await ws.checkpoint(input(taskId)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TestFilesChangedError);
  return (err as TestFilesChangedError).files;
}

const remoteBranch = (bare: string) => git(bare, 'for-each-ref', '--format=%(objectname)', 'refs/heads/goal/g1');

describe('GitWorkspace: test files at the goal base are protected from the task (real git)', () => {
  it('refuses a checkpoint that deletes a test file: nothing committed or pushed, nothing left staged', async () => {
    const { repo, ws } = await setup();
    const start = await ws.head();
    await rm(join(ws.dir, 'test', 'a.test.js'));
    await writeFile(join(ws.dir, 'src', 'a.js'), 'export const a = 2;\n');
    expect(await refusal(ws, 't1')).toEqual([{ path: 'test/a.test.js', change: 'deleted' }]);
    expect(await ws.head()).toBe(start);
    expect(remoteBranch(repo.bare)).toBe('');
    expect(git(ws.dir, 'diff', '--cached', '--name-only')).toBe('');
    // The task's work stays in the tree for the repair attempt to fix.
    expect(existsSync(join(ws.dir, 'test', 'a.test.js'))).toBe(false);
  });

  it('refuses a checkpoint that edits an existing test file, and leaves the remote branch where it was', async () => {
    const { repo, ws } = await setup();
    await writeFile(join(ws.dir, 'src', 'b.js'), 'b');
    const first = await ws.checkpoint(input('t1'));
    await writeFile(join(ws.dir, 'test', 'b.test.js'), 'weakened\n');
    await writeFile(join(ws.dir, 'src', 'feature.test.ts'), 'new, allowed\n');
    const err = await ws.checkpoint(input('t2')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TestFilesChangedError);
    expect((err as TestFilesChangedError).files).toEqual([{ path: 'test/b.test.js', change: 'modified' }]);
    expect((err as Error).message).toMatch(/test\/b\.test\.js \(modified\)/);
    expect(remoteBranch(repo.bare)).toBe(first.sha);
    expect(await ws.head()).toBe(first.sha);
  });

  it('allows new test files, and changes to test files an earlier checkpoint of the goal added', async () => {
    const { repo, ws } = await setup();
    await mkdir(join(ws.dir, 'test', 'unit'), { recursive: true });
    await writeFile(join(ws.dir, 'test', 'unit', 'new.test.js'), 'v1\n');
    const one = await ws.checkpoint(input('t1'));
    expect(git(repo.bare, 'show', `${one.sha}:test/unit/new.test.js`)).toBe('v1');

    await writeFile(join(ws.dir, 'test', 'unit', 'new.test.js'), 'v2\n');
    const two = await ws.checkpoint(input('t2'));
    expect(git(repo.bare, 'show', `${two.sha}:test/unit/new.test.js`)).toBe('v2');
    await rm(join(ws.dir, 'test', 'unit', 'new.test.js'));
    const three = await ws.checkpoint(input('t3'));
    expect(remoteBranch(repo.bare)).toBe(three.sha);
  });

  it('refuses nothing without test paths (a task that may edit tests)', async () => {
    const { repo, ws } = await setup();
    await rm(join(ws.dir, 'test', 'a.test.js'));
    await writeFile(join(ws.dir, 'test', 'b.test.js'), 'changed\n');
    const cp = await ws.checkpoint(input('t1', null));
    expect(remoteBranch(repo.bare)).toBe(cp.sha);
    expect(git(repo.bare, 'show', '--name-status', '--format=', cp.sha).split('\n').sort()).toEqual(['D\ttest/a.test.js', 'M\ttest/b.test.js']);
    await writeFile(join(ws.dir, 'test', 'b.test.js'), 'again\n');
    await ws.checkpoint(input('t2', []));
  });

  it('reads paths literally: a leading dash, glob characters and a newline in a name', async () => {
    const { repo, ws } = await setup();
    // `test/[ab].test.js` as a pattern would name test/a.test.js (at the base): literally, it is new.
    await writeFile(join(ws.dir, 'test', '[ab].test.js'), 'new\n');
    await writeFile(join(ws.dir, 'test', '-rf.test.js'), 'new\n');
    const cp = await ws.checkpoint(input('t1'));
    expect(remoteBranch(repo.bare)).toBe(cp.sha);

    await writeFile(join(ws.dir, 'test', '-x[a].test.js'), 'changed\n');
    await rm(join(ws.dir, 'test', 'n\nl.test.js'));
    expect(await refusal(ws, 't2')).toEqual([
      { path: 'test/-x[a].test.js', change: 'modified' },
      { path: 'test/n\nl.test.js', change: 'deleted' },
    ]);
  });

  it('refuses a test file of the base that the task deleted and added again, or turned into a symlink', async () => {
    const { ws } = await setup();
    await rm(join(ws.dir, 'test', 'a.test.js'));
    await ws.checkpoint(input('t1', null)); // a task allowed to delete it
    await writeFile(join(ws.dir, 'test', 'a.test.js'), 'back, but different\n');
    await rm(join(ws.dir, 'test', 'b.test.js'));
    await symlink('../src/a.js', join(ws.dir, 'test', 'b.test.js'));
    expect(await refusal(ws, 't2')).toEqual([
      { path: 'test/a.test.js', change: 'modified' },
      { path: 'test/b.test.js', change: 'modified' },
    ]);
  });

  it('a workspace resuming the goal branch finds the same base: files the goal added are not base files', async () => {
    const { root, repo, ws, make } = await setup();
    await writeFile(join(ws.dir, 'test', 'added.test.js'), 'v1\n');
    const one = await ws.checkpoint(input('t1'));
    // The base branch moves on meanwhile: its new test file is not at the goal's base either.
    await writeFile(join(repo.work, 'test', 'later.test.js'), 'on main\n');
    git(repo.work, 'add', '-A');
    git(repo.work, '-c', 'user.name=h', '-c', 'user.email=h@h', 'commit', '-qm', 'later');
    git(repo.work, 'push', '-q', 'origin', 'main');

    const resumed = make(join(root, 'ws2'));
    expect((await resumed.prepare()).map((c) => c.sha)).toEqual([one.sha]);
    await writeFile(join(resumed.dir, 'test', 'added.test.js'), 'v2\n');
    await writeFile(join(resumed.dir, 'test', 'later.test.js'), 'the goal’s own\n');
    const two = await resumed.checkpoint(input('t2'));
    expect(remoteBranch(repo.bare)).toBe(two.sha);
    await writeFile(join(resumed.dir, 'test', 'a.test.js'), 'changed\n');
    expect(await refusal(resumed, 't3')).toEqual([{ path: 'test/a.test.js', change: 'modified' }]);
  });

  it('treeKey is the last checkpoint’s tree, whatever the task changed since', async () => {
    const { ws } = await setup();
    const before = await ws.treeKey();
    expect(before).toBe(git(ws.dir, 'rev-parse', 'HEAD^{tree}'));
    await writeFile(join(ws.dir, 'src', 'a.js'), 'changed\n');
    expect(await ws.treeKey()).toBe(before);
    await ws.checkpoint(input('t1'));
    expect(await ws.treeKey()).not.toBe(before);
    expect(await ws.treeKey()).toBe(git(ws.dir, 'rev-parse', 'HEAD^{tree}'));
  });
});

describe('GitWorkspace.restoreTestFiles (verify_with_base_tests)', () => {
  it('puts back the base test files the task modified or deleted; new test files and other changes stay', async () => {
    const { ws } = await setup();
    await writeFile(join(ws.dir, 'test', 'goal.test.js'), 'added by the goal\n');
    await ws.checkpoint(input('t1'));

    await writeFile(join(ws.dir, 'test', 'a.test.js'), 'weakened\n');
    await rm(join(ws.dir, 'test', 'b.test.js'));
    await rm(join(ws.dir, 'test', 'n\nl.test.js'));
    await writeFile(join(ws.dir, 'test', 'goal.test.js'), 'changed, not a base file\n');
    await writeFile(join(ws.dir, 'test', 'new.test.js'), 'new\n');
    await writeFile(join(ws.dir, 'src', 'a.js'), 'the change\n');

    expect((await ws.restoreTestFiles(TEST_PATHS)).sort()).toEqual(['test/a.test.js', 'test/b.test.js', 'test/n\nl.test.js']);
    expect(await readFile(join(ws.dir, 'test', 'a.test.js'), 'utf8')).toBe('a test\n');
    expect(await readFile(join(ws.dir, 'test', 'b.test.js'), 'utf8')).toBe('b test\n');
    expect(await readFile(join(ws.dir, 'test', 'n\nl.test.js'), 'utf8')).toBe('newline in the name\n');
    expect(await readFile(join(ws.dir, 'test', 'goal.test.js'), 'utf8')).toBe('changed, not a base file\n');
    expect(await readFile(join(ws.dir, 'test', 'new.test.js'), 'utf8')).toBe('new\n');
    expect(await readFile(join(ws.dir, 'src', 'a.js'), 'utf8')).toBe('the change\n');
    expect(await ws.restoreTestFiles(TEST_PATHS)).toEqual([]);
    expect(await ws.restoreTestFiles([])).toEqual([]);
  });

  it('never writes outside the workspace when the task replaced a test folder with a symlink', async () => {
    const { root, ws } = await setup();
    const outside = join(root, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'a.test.js'), 'outside\n');
    await rename(join(ws.dir, 'test'), join(root, 'moved-away'));
    await symlink(outside, join(ws.dir, 'test'));

    const restored = await ws.restoreTestFiles(TEST_PATHS);
    expect(restored).toContain('test/a.test.js');
    expect(await readFile(join(outside, 'a.test.js'), 'utf8')).toBe('outside\n');
    expect(lstatSync(join(ws.dir, 'test')).isSymbolicLink()).toBe(false);
    expect(await readFile(join(ws.dir, 'test', 'a.test.js'), 'utf8')).toBe('a test\n');
  });
});
