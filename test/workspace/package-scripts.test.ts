import { rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { VerificationScriptChangedError } from '../../src/ports/workspace.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { changedScripts, MAX_PACKAGE_JSON_BYTES, PackageManagerConfigChangedError } from '../../src/workspace/package-scripts.js';
import { git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

const PACKAGE = { name: 'sum', version: '1.0.0', scripts: { test: 'node test/sum.test.js', lint: 'eslint .' }, dependencies: { a: '1.0.0' } };
const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

async function setup(files: Record<string, string> = { 'package.json': json(PACKAGE), 'sum.js': 'module.exports = 1;\n' }) {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'), files);
  const ws = new GitWorkspace({
    remote: repo.bare,
    dir: join(root, 'ws'),
    goalId: 'g1',
    branch: 'goal/g1',
    protectedPaths: [],
    identity: { name: 'goal-loop', email: 'bot@example.com' },
    syncIntervalMs: 0,
  });
  await ws.prepare();
  return { repo, ws };
}

/** A checkpoint input; `null`: without protected scripts. */
const input = (taskId: string, protectedScripts: readonly string[] | null = ['test']) => ({ goalId: 'g1', taskId, title: taskId, attempt: 1, ...(protectedScripts ? { protectedScripts } : {}) });

async function refusal(ws: GitWorkspace, taskId: string, protectedScripts: readonly string[] = ['test']): Promise<VerificationScriptChangedError> {
  const err = await ws.checkpoint(input(taskId, protectedScripts)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VerificationScriptChangedError);
  return err as VerificationScriptChangedError;
}

const writePackage = (ws: GitWorkspace, value: unknown) => writeFile(join(ws.dir, 'package.json'), typeof value === 'string' ? value : json(value));
const remoteBranch = (bare: string) => git(bare, 'for-each-ref', '--format=%(objectname)', 'refs/heads/goal/g1');

describe('GitWorkspace: the package.json scripts the verification runs are protected from the task (real git)', () => {
  it('refuses `"test": "exit 0"`: nothing committed or pushed, nothing staged, the work left in the tree; the message names the script, never its text', async () => {
    const { repo, ws } = await setup();
    const start = await ws.head();
    await writeFile(join(ws.dir, 'sum.js'), 'module.exports = 2;\n');
    await writePackage(ws, { ...PACKAGE, scripts: { ...PACKAGE.scripts, test: 'exit 0' } });
    const err = await refusal(ws, 't1');
    expect(err.scripts).toEqual([{ name: 'test', change: 'changed' }]);
    expect(err.message).toMatch(/package\.json scripts that the verification runs: "test" \(changed\)/);
    expect(err.message).toMatch(/may not change how its verification runs/);
    expect(err.message).not.toMatch(/exit 0/);
    expect(await ws.head()).toBe(start);
    expect(remoteBranch(repo.bare)).toBe('');
    expect(git(ws.dir, 'diff', '--cached', '--name-only')).toBe('');
    expect(git(ws.dir, 'diff', '--name-only').split('\n').sort()).toEqual(['package.json', 'sum.js']);
  });

  it('refuses an added pretest or posttest hook, and a removed test script', async () => {
    const { ws } = await setup();
    await writePackage(ws, { ...PACKAGE, scripts: { ...PACKAGE.scripts, pretest: 'node cheat.js' } });
    expect((await refusal(ws, 't1')).scripts).toEqual([{ name: 'pretest', change: 'added' }]);
    await writePackage(ws, { ...PACKAGE, scripts: { lint: 'eslint .', posttest: 'true' } });
    expect((await refusal(ws, 't1')).scripts).toEqual([
      { name: 'test', change: 'removed' },
      { name: 'posttest', change: 'added' },
    ]);
  });

  it('refuses deleting package.json (its scripts are removed) and turning it into a symlink', async () => {
    const { ws } = await setup();
    await rm(join(ws.dir, 'package.json'));
    expect((await refusal(ws, 't1')).scripts).toEqual([{ name: 'test', change: 'removed' }]);
    await writeFile(join(ws.dir, 'other.json'), json({ scripts: { test: 'node test/sum.test.js' } }));
    await symlink('other.json', join(ws.dir, 'package.json'));
    expect((await refusal(ws, 't1')).message).toMatch(/package\.json is a symlink, so it cannot be checked/);
  });

  it('refuses a package.json JSON.parse cannot read, or one over 1 MiB: it cannot tell what the verification ran', async () => {
    const { ws } = await setup();
    // Trailing comma: bun reads it, JSON.parse does not.
    await writePackage(ws, '{ "scripts": { "test": "exit 0", } }\n');
    expect((await refusal(ws, 't1')).message).toMatch(/package\.json is not a JSON object, so it cannot be checked/);
    await writePackage(ws, json({ ...PACKAGE, description: 'x'.repeat(MAX_PACKAGE_JSON_BYTES) }));
    expect((await refusal(ws, 't1')).message).toMatch(/package\.json is larger than 1 MiB/);
  });

  it('allows changed dependencies, other scripts, formatting and key order; refused names are checked again on the next checkpoint', async () => {
    const { repo, ws } = await setup();
    await writePackage(ws, { dependencies: { a: '2.0.0', b: '1.0.0' }, scripts: { build: 'tsc', lint: 'biome check', test: 'node test/sum.test.js' }, name: 'sum' });
    const one = await ws.checkpoint(input('t1'));
    expect(remoteBranch(repo.bare)).toBe(one.sha);
    // The base is the goal's, not the last checkpoint's: an earlier task cannot launder a change.
    await writePackage(ws, { ...PACKAGE, scripts: { test: 'exit 0' } });
    expect((await refusal(ws, 't2')).scripts).toEqual([{ name: 'test', change: 'changed' }]);
  });

  it('refuses nothing without protected scripts, or when package.json is not staged', async () => {
    const { repo, ws } = await setup();
    await writeFile(join(ws.dir, 'sum.js'), 'module.exports = 3;\n');
    const one = await ws.checkpoint(input('t1'));
    expect(remoteBranch(repo.bare)).toBe(one.sha);
    await writePackage(ws, { ...PACKAGE, scripts: { test: 'exit 0' } });
    const two = await ws.checkpoint(input('t2', null));
    expect(remoteBranch(repo.bare)).toBe(two.sha);
    await writePackage(ws, { ...PACKAGE, scripts: { test: 'true' } });
    await ws.checkpoint(input('t3', []));
  });

  it('allows a task to create package.json with the scripts its verification runs (the base had none to protect)', async () => {
    const { repo, ws } = await setup({ 'sum.js': 'module.exports = 1;\n' });
    await writePackage(ws, { scripts: { test: 'node test/sum.test.js', pretest: 'tsc' } });
    const cp = await ws.checkpoint(input('t1'));
    expect(remoteBranch(repo.bare)).toBe(cp.sha);
  });

  it('allows fixing a package.json that JSON.parse could not read at the base', async () => {
    const { repo, ws } = await setup({ 'package.json': '{ "scripts": { "test": "jest", } }\n' });
    await writePackage(ws, { scripts: { test: 'exit 0' } });
    const cp = await ws.checkpoint(input('t1'));
    expect(remoteBranch(repo.bare)).toBe(cp.sha);
  });
});

describe('changedScripts', () => {
  it('compares own keys only, and any JSON value', () => {
    expect(changedScripts({}, { constructor: 'x', toString: 'y' }, ['constructor', 'toString'])).toEqual([
      { name: 'constructor', change: 'added' },
      { name: 'toString', change: 'added' },
    ]);
    expect(changedScripts({ test: 'a' }, { test: ['a'] }, ['test'])).toEqual([{ name: 'test', change: 'changed' }]);
    expect(changedScripts({ test: 'a', pretest: 'b' }, { test: 'a', pretest: 'b', prelint: 'c' }, ['test', 'test'])).toEqual([]);
  });

  it('names each of N, preN and postN once', () => {
    expect(changedScripts({ pretest: 'x' }, { test: 'y', posttest: 'z' }, ['test', 'pretest'])).toEqual([
      { name: 'test', change: 'added' },
      { name: 'pretest', change: 'removed' },
      { name: 'posttest', change: 'added' },
    ]);
  });
});

describe('VerificationScriptChangedError', () => {
  it('escapes and shortens names in its message', () => {
    const err = new VerificationScriptChangedError([{ name: `a\n"b${'c'.repeat(100)}`, change: 'added' }]);
    expect(err.message).toContain('"a\\n\\"bccc');
    expect(err.message).not.toContain('c'.repeat(61));
  });
});

describe('package manager config next to the protected scripts', () => {
  const files = { 'package.json': json(PACKAGE), 'sum.js': 'module.exports = 1;\n', '.npmrc': 'fund=false\n' };
  const refused = async (ws: GitWorkspace, taskId: string, scripts: readonly string[] | null = ['test']) => {
    const err = await ws.checkpoint(input(taskId, scripts)).then(
      () => undefined,
      (e: unknown) => e,
    );
    return err instanceof PackageManagerConfigChangedError ? err.paths : err;
  };

  it('refuses a config added, rewritten, deleted or made a symlink; the index is left unstaged', async () => {
    const { ws } = await setup(files);
    const dir = ws.dir;
    await writeFile(join(dir, '.yarnrc.yml'), 'yarnPath: ./cheat.js\n');
    expect(await refused(ws, 'added')).toEqual(['.yarnrc.yml']);
    expect(git(dir, 'diff', '--cached', '--name-only')).toBe('');
    await rm(join(dir, '.yarnrc.yml'));
    await writeFile(join(dir, '.npmrc'), 'script-shell=/bin/true\n');
    expect(await refused(ws, 'rewritten')).toEqual(['.npmrc']);
    await rm(join(dir, '.npmrc'));
    expect(await refused(ws, 'deleted')).toEqual(['.npmrc']);
    await writeFile(join(dir, 'other'), 'fund=false\n');
    await symlink('other', join(dir, '.npmrc'));
    expect(await refused(ws, 'symlink')).toEqual(['.npmrc']);
  });

  it('takes the same config back, and anything without protected scripts', async () => {
    const { ws } = await setup(files);
    await writeFile(join(ws.dir, 'sum.js'), 'module.exports = 2;\n');
    await writeFile(join(ws.dir, '.npmrc'), 'fund=false\n');
    expect(await refused(ws, 'same')).toBeUndefined();
    await writeFile(join(ws.dir, 'bunfig.toml'), '[run]\nshell = "system"\n');
    expect(await refused(ws, 'free', null)).toBeUndefined();
  });

  it('sees a gitignored config too: the verification read it, though no checkpoint holds it', async () => {
    const { ws } = await setup({ ...files, '.gitignore': '.yarnrc\n' });
    await writeFile(join(ws.dir, '.yarnrc'), 'yarn-path "./cheat.js"\n');
    expect(await refused(ws, 'ignored')).toEqual(['.yarnrc']);
  });
});
