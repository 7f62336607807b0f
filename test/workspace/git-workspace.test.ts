import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { CheckpointRefusedError } from '../../src/ports/workspace.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

async function setup(files?: Record<string, string>) {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'), files);
  const make = (dir = join(root, 'ws')) =>
    new GitWorkspace({
      remote: repo.bare,
      dir,
      goalId: 'g1',
      branch: 'goal/g1',
      protectedPaths: ['.github/workflows/**'],
      identity: { name: 'goal-loop', email: 'bot@example.com' },
      syncIntervalMs: 0,
    });
  return { root, repo, make };
}

describe('GitWorkspace', () => {
  it('starts the goal branch from the remote default branch when it does not exist yet', async () => {
    const { repo, make } = await setup();
    const ws = make();
    expect(await ws.prepare()).toEqual([]);
    expect(await ws.head()).toBe(git(repo.bare, 'rev-parse', 'main'));
    expect(git(ws.dir, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('goal/g1');
  });

  it('commits a checkpoint with the subject and trailers, and pushes it to the goal branch', async () => {
    const { repo, make } = await setup();
    const ws = make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'new.txt'), 'hello\n');
    const cp = await ws.checkpoint({ goalId: 'g1', taskId: 'task-01', title: 'Add new.txt', attempt: 2 });
    expect(git(repo.bare, 'rev-parse', 'goal/g1')).toBe(cp.sha);
    expect(git(repo.bare, 'log', '-1', '--format=%B', 'goal/g1')).toBe('task-01: Add new.txt\n\nGoal-Id: g1\nGoal-Task: task-01\nGoal-Attempt: 2');
    expect(git(repo.bare, 'log', '--format=%(trailers:key=Goal-Task,valueonly)', 'goal/g1').split('\n').filter(Boolean)).toEqual(['task-01']);
    expect(git(repo.bare, 'show', 'goal/g1:new.txt')).toBe('hello');
  });

  it('records a checkpoint even when the task changed nothing', async () => {
    const { repo, make } = await setup();
    const ws = make();
    await ws.prepare();
    await ws.checkpoint({ goalId: 'g1', taskId: 'check-only', title: 'Nothing to change', attempt: 1 });
    expect(checkpointCommits(repo.bare, 'goal/g1').map((c) => c.task)).toEqual(['check-only']);
  });

  it('rolls a failed attempt back completely: edits, new files, ignored files and staged changes', async () => {
    const { make } = await setup({ 'a.txt': 'original\n', '.gitignore': 'build/\n' });
    const ws = make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'a.txt'), 'changed\n');
    await writeFile(join(ws.dir, 'untracked.txt'), 'x');
    await mkdir(join(ws.dir, 'build'));
    await writeFile(join(ws.dir, 'build', 'out.js'), 'x');
    await mkdir(join(ws.dir, 'deep', 'er'), { recursive: true });
    await writeFile(join(ws.dir, 'deep', 'er', 'f'), 'x');
    git(ws.dir, 'add', 'untracked.txt');
    expect((await ws.changedFiles()).sort()).toEqual(['a.txt', 'deep/er/f', 'untracked.txt']);
    await ws.rollback();
    expect(await readFile(join(ws.dir, 'a.txt'), 'utf8')).toBe('original\n');
    for (const p of ['untracked.txt', 'build', 'deep']) expect(existsSync(join(ws.dir, p))).toBe(false);
    expect(git(ws.dir, 'status', '--porcelain', '--ignored')).toBe('');
  });

  it('keeps what the setup step installed (ignored files present at the baseline) across rollbacks', async () => {
    const { make } = await setup({ '.gitignore': 'node_modules/\ndist/\n' });
    const ws = make();
    await ws.prepare();
    await mkdir(join(ws.dir, 'node_modules', 'dep'), { recursive: true });
    await writeFile(join(ws.dir, 'node_modules', 'dep', 'index.js'), 'x');
    await ws.preserveIgnored();
    await mkdir(join(ws.dir, 'dist'));
    await writeFile(join(ws.dir, 'dist', 'bundle.js'), 'x');
    await ws.rollback();
    expect(existsSync(join(ws.dir, 'node_modules', 'dep', 'index.js'))).toBe(true);
    expect(existsSync(join(ws.dir, 'dist'))).toBe(false);
  });

  it('never checkpoints what setup produced (not gitignored): new folders and files, and tracked files it rewrote; a task may still change them', async () => {
    const { repo, make } = await setup({ 'package-lock.json': '{"v":1}\n' });
    const ws = make();
    await ws.prepare();
    // Setup, as pnpm or a code generator would: a store inside the workspace, a new file, a rewritten lockfile.
    await mkdir(join(ws.dir, '.pnpm-store', 'v3', 'files'), { recursive: true });
    await writeFile(join(ws.dir, '.pnpm-store', 'v3', 'files', 'blob'), 'x'.repeat(1000));
    await writeFile(join(ws.dir, 'generated.ts'), 'export const x = 1;\n');
    await writeFile(join(ws.dir, 'package-lock.json'), '{"v":2}\n');
    await writeFile(join(ws.dir, 'with\nnewline [*].txt'), 'odd name');
    expect((await ws.preserveIgnored()).sort()).toEqual(['.pnpm-store/', 'generated.ts', 'package-lock.json', 'with\nnewline [*].txt']);

    // Task 1 changes only its own file: the checkpoint holds it alone; setup's output stays in place.
    await writeFile(join(ws.dir, 'task1.txt'), '1');
    expect(await ws.changedFiles()).toEqual(['task1.txt']);
    const one = await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'one', attempt: 1 });
    expect(git(repo.bare, 'show', '--name-only', '--format=', one.sha)).toBe('task1.txt');
    expect(existsSync(join(ws.dir, '.pnpm-store', 'v3', 'files', 'blob'))).toBe(true);

    // A failed attempt rolls back, and setup's output survives it.
    await writeFile(join(ws.dir, 'junk.txt'), 'x');
    await ws.rollback();
    expect(existsSync(join(ws.dir, 'junk.txt'))).toBe(false);
    for (const p of ['.pnpm-store/v3/files/blob', 'generated.ts']) expect(existsSync(join(ws.dir, p))).toBe(true);

    // Task 2 edits a file setup created and the lockfile: those edits are the task's, and are committed.
    await writeFile(join(ws.dir, 'generated.ts'), 'export const x = 2;\n');
    await writeFile(join(ws.dir, 'package-lock.json'), '{"v":3}\n');
    const two = await ws.checkpoint({ goalId: 'g1', taskId: 't2', title: 'two', attempt: 1 });
    const files = git(repo.bare, 'show', '--name-only', '--format=', two.sha).split('\n').sort();
    expect(files).toEqual(['generated.ts', 'package-lock.json']);
  });

  it('rolls back to the last checkpoint, not to the start', async () => {
    const { make } = await setup();
    const ws = make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1');
    const cp = await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'one', attempt: 1 });
    await writeFile(join(ws.dir, 'one.txt'), 'broken');
    await ws.rollback();
    expect(await ws.head()).toBe(cp.sha);
    expect(await readFile(join(ws.dir, 'one.txt'), 'utf8')).toBe('1');
  });

  it('resumes from the checkpoints on the remote, in a fresh clone or a reused one', async () => {
    const { root, make } = await setup();
    const first = make();
    await first.prepare();
    await writeFile(join(first.dir, 'one.txt'), '1');
    const c1 = await first.checkpoint({ goalId: 'g1', taskId: 't1', title: 'one', attempt: 1 });
    await writeFile(join(first.dir, 'two.txt'), '2');
    const c2 = await first.checkpoint({ goalId: 'g1', taskId: 't2', title: 'two', attempt: 3 });

    const fresh = make(join(root, 'other-ws'));
    expect(await fresh.prepare()).toEqual([
      { taskId: 't1', sha: c1.sha, attempt: 1 },
      { taskId: 't2', sha: c2.sha, attempt: 3 },
    ]);
    expect(await fresh.head()).toBe(c2.sha);

    const reused = make();
    expect((await reused.prepare()).map((c) => c.taskId)).toEqual(['t1', 't2']);
  });

  it('forgets a commit that never reached the remote (a crash between commit and push)', async () => {
    const { repo, make } = await setup();
    const ws = make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1');
    const c1 = await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'one', attempt: 1 });
    // Simulate the crash: a local commit with trailers, never pushed, and a dirty tree.
    await writeFile(join(ws.dir, 'two.txt'), '2');
    git(ws.dir, 'add', '-A');
    git(ws.dir, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-qm', 't2: two\n\nGoal-Id: g1\nGoal-Task: t2\nGoal-Attempt: 1');
    await writeFile(join(ws.dir, 'dirty.txt'), 'x');

    const again = make();
    expect((await again.prepare()).map((c) => c.taskId)).toEqual(['t1']);
    expect(await again.head()).toBe(c1.sha);
    expect(existsSync(join(again.dir, 'two.txt'))).toBe(false);
    expect(existsSync(join(again.dir, 'dirty.txt'))).toBe(false);
    expect(git(repo.bare, 'rev-parse', 'goal/g1')).toBe(c1.sha);
  });

  it('ignores checkpoints of other goals on the same branch', async () => {
    const { root, repo, make } = await setup();
    const ws = make();
    await ws.prepare();
    await ws.checkpoint({ goalId: 'other-goal', taskId: 't9', title: 'foreign', attempt: 1 });
    await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'ours', attempt: 1 });
    expect(checkpointCommits(repo.bare, 'goal/g1')).toHaveLength(2);
    expect((await make(join(root, 'ws2')).prepare()).map((c) => c.taskId)).toEqual(['t1']);
  });

  it('refuses a checkpoint that touches protected paths, and leaves nothing committed', async () => {
    const { repo, make } = await setup();
    const ws = make();
    await ws.prepare();
    await mkdir(join(ws.dir, '.github', 'workflows'), { recursive: true });
    await writeFile(join(ws.dir, '.github', 'workflows', 'ci.yml'), 'on: push\n');
    await expect(ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'sneaky', attempt: 1 })).rejects.toThrow(CheckpointRefusedError);
    await expect(ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'sneaky', attempt: 1 })).rejects.toThrow(/\.github\/workflows\/ci\.yml/);
    expect(git(repo.bare, 'branch', '--list', 'goal/g1')).toBe('');
    expect(await ws.head()).toBe(git(repo.bare, 'rev-parse', 'main'));
  });

  it("never touches the user's branches or working tree", async () => {
    const { repo, make } = await setup();
    await writeFile(join(repo.work, 'uncommitted.txt'), 'mine');
    const before = { main: git(repo.bare, 'rev-parse', 'main'), status: git(repo.work, 'status', '--porcelain'), head: git(repo.work, 'rev-parse', 'HEAD') };
    const ws = make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'x.txt'), 'x');
    await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'x', attempt: 1 });
    await ws.rollback();
    expect(git(repo.bare, 'rev-parse', 'main')).toBe(before.main);
    expect(git(repo.work, 'status', '--porcelain')).toBe(before.status);
    expect(git(repo.work, 'rev-parse', 'HEAD')).toBe(before.head);
    expect(git(repo.bare, 'for-each-ref', '--format=%(refname)', 'refs/heads').split('\n').sort()).toEqual(['refs/heads/goal/g1', 'refs/heads/main']);
  });

  it('picks up commits a human pushed to the goal branch and never overwrites them', async () => {
    const { root, repo, make } = await setup();
    const ws = make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'bot.txt'), 'bot');
    await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'bot', attempt: 1 });
    // A human clones the goal branch, commits and pushes.
    const human = join(root, 'human');
    git(root, 'clone', '-q', '--branch', 'goal/g1', repo.bare, human);
    await writeFile(join(human, 'human.txt'), 'fix');
    git(human, 'add', '-A');
    git(human, '-c', 'user.name=h', '-c', 'user.email=h@h', 'commit', '-qm', 'human fix');
    git(human, 'push', '-q', 'origin', 'goal/g1');
    const humanSha = git(human, 'rev-parse', 'HEAD');

    await ws.sync();
    expect(await ws.head()).toBe(humanSha);
    expect(existsSync(join(ws.dir, 'human.txt'))).toBe(true);
    await writeFile(join(ws.dir, 'next.txt'), 'n');
    await ws.checkpoint({ goalId: 'g1', taskId: 't2', title: 'next', attempt: 1 });
    expect(git(repo.bare, 'rev-parse', 'goal/g1~1')).toBe(humanSha);
  });

  it("restores .git/config when a task rewrites it, so planted settings never reach the bot's git", async () => {
    const { make } = await setup();
    const ws = make();
    await ws.prepare();
    const cfg = join(ws.dir, '.git', 'config');
    const trusted = await readFile(cfg, 'utf8');
    await writeFile(cfg, `${trusted}[core]\n\thooksPath = /tmp/evil\n[alias]\n\tcommit = !touch /tmp/pwned\n`);
    await writeFile(join(ws.dir, 'f.txt'), 'x');
    await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'f', attempt: 1 });
    expect(await readFile(cfg, 'utf8')).toBe(trusted);
  });
});
