import { existsSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace, releaseWorkspace } from '../../src/workspace/git-workspace.js';
import { NestedRepositoryError, NestedScanMemo } from '../../src/workspace/nested-repos.js';
import { SetupCache } from '../../src/workspace/setup-cache.js';
import { git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';
import { mirrorSetup } from './mirror-helpers.js';

/** A goal's workspace on `remote` with the setup cache (keyed by package.json), under `root/ws`. */
function setupWorkspace(root: string, remote: string, id: string, setupCache: SetupCache, nestedScanMemo?: NestedScanMemo): GitWorkspace {
  return new GitWorkspace({
    remote,
    dir: join(root, 'ws', id),
    goalId: id,
    branch: `goal/${id}`,
    identity: { name: 'goal-loop', email: 'bot@example.com' },
    setupCache,
    setupInputs: ['package.json'],
    ...(nestedScanMemo ? { nestedScanMemo } : {}),
  });
}

const SETUP = { commands: ['npm ci'], network: false };

/** The sample repository, a setup cache without ready copies, and a maker of goal workspaces on both. */
async function sampleWithCache() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const setupCache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30, readyCopies: false });
  return { root, repo, make: (id: string) => setupWorkspace(root, repo.bare, id, setupCache) };
}

/** A repository laid out in `dir/.git` whose config would run a filter as whoever runs git there. */
async function plantRepository(dir: string): Promise<void> {
  await mkdir(join(dir, '.git', 'refs'), { recursive: true });
  await mkdir(join(dir, '.git', 'objects'), { recursive: true });
  await writeFile(join(dir, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(join(dir, '.git', 'config'), '[filter "x"]\n\tclean = touch /tmp/pwned\n');
}

/** What the warm path of a setup cache hit skips, and what it still does. */
describe('setup output on the warm path', () => {
  it('ignored files inside a folder setup made are kept with it: listed once, never checkpointed, kept by rollbacks', async () => {
    const { repo, make } = await mirrorSetup({}, { '.gitignore': '*.log\n/cache/\n', 'README.md': 'x\n' });
    const ws = make('g1');
    await ws.prepare();
    // Setup: a dependency folder holding an ignored file, an ignored file and an ignored folder beside it.
    await mkdir(join(ws.dir, 'node_modules', 'dep'), { recursive: true });
    await writeFile(join(ws.dir, 'node_modules', 'dep', 'index.js'), 'x');
    await writeFile(join(ws.dir, 'node_modules', 'dep', 'build.log'), 'x');
    await writeFile(join(ws.dir, 'setup.log'), 'x');
    await mkdir(join(ws.dir, 'cache'));
    await writeFile(join(ws.dir, 'cache', 'blob'), 'x');
    expect(await ws.preserveIgnored()).toEqual(['node_modules/']);
    await writeFile(join(ws.dir, 'task.txt'), '1');
    await writeFile(join(ws.dir, 'task.log'), '1');
    await ws.rollback();
    for (const p of ['node_modules/dep/index.js', 'node_modules/dep/build.log', 'setup.log', 'cache/blob']) expect(existsSync(join(ws.dir, p)), p).toBe(true);
    for (const p of ['task.txt', 'task.log']) expect(existsSync(join(ws.dir, p)), p).toBe(false);
    await writeFile(join(ws.dir, 'task.txt'), '1');
    const cp = await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'one', attempt: 1 });
    expect(git(repo.bare, 'show', '--name-only', '--format=', cp.sha)).toBe('task.txt');
  });

  it("a released tree is parked without setup's top-level folders; one a task swapped for a link is not followed", async () => {
    const { root, repo, cache, make } = await mirrorSetup();
    const setupRan = async (dir: string) => {
      await mkdir(join(dir, 'node_modules', 'dep'), { recursive: true });
      await writeFile(join(dir, 'node_modules', 'dep', 'index.js'), 'x');
    };
    const ws1 = make('g1');
    await ws1.prepare();
    await setupRan(ws1.dir);
    expect(await ws1.preserveIgnored()).toEqual(['node_modules/']);
    // As the CLI and the server release a goal's workspace: by its options, with no instance.
    await releaseWorkspace({ dir: ws1.dir, remote: repo.bare, mirrorCache: cache });
    const [parked] = await cache.warm.list();
    expect(parked).toBeDefined();
    expect(existsSync(join(parked!.path, 'node_modules'))).toBe(false);
    expect(existsSync(join(parked!.path, 'README.md'))).toBe(true);

    const outside = join(root, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'keep.txt'), 'x');
    const ws2 = make('g2');
    await ws2.prepare();
    await setupRan(ws2.dir);
    await ws2.preserveIgnored();
    await rm(join(ws2.dir, 'node_modules'), { recursive: true });
    symlinkSync(outside, join(ws2.dir, 'node_modules'));
    await ws2.release();
    expect(readdirSync(outside)).toEqual(['keep.txt']);
    const ws3 = make('g3');
    await ws3.prepare();
    expect(existsSync(join(ws3.dir, 'node_modules'))).toBe(false);
    expect(readdirSync(outside)).toEqual(['keep.txt']);
  });

  it('attack: after a restore, a repository planted in the restored folder is refused at the checkpoint, and one planted elsewhere at once', async () => {
    const { make } = await sampleWithCache();
    const first = make('g1');
    await first.prepare();
    expect(await first.restoreSetup(SETUP)).toBe(false);
    await mkdir(join(first.dir, 'node_modules', 'dep'), { recursive: true });
    await writeFile(join(first.dir, 'node_modules', 'dep', 'index.js'), 'x');
    await first.preserveIgnored();
    await first.saveSetup(SETUP);

    // The restored folder is not searched again before setup's output is marked; a checkpoint searches it.
    const second = make('g2');
    await second.prepare();
    expect(await second.restoreSetup(SETUP)).toBe(true);
    await second.preserveIgnored();
    await plantRepository(join(second.dir, 'node_modules', 'dep'));
    await writeFile(join(second.dir, 'task.txt'), '1');
    await expect(second.checkpoint({ goalId: 'g2', taskId: 't1', title: 't', attempt: 1 })).rejects.toBeInstanceOf(NestedRepositoryError);

    // Anything beside the restored folders is searched as ever.
    const third = make('g3');
    await third.prepare();
    expect(await third.restoreSetup(SETUP)).toBe(true);
    await plantRepository(join(third.dir, 'vendor', 'lib'));
    await expect(third.preserveIgnored()).rejects.toBeInstanceOf(NestedRepositoryError);
  });

  it('attack: once the base changes an input file, the next goal misses (its key is read beside the checkout, from the commit it checks out)', async () => {
    const { root, repo, make } = await sampleWithCache();
    const setUp = async (ws: GitWorkspace, marker: string) => {
      await ws.prepare();
      expect(await ws.restoreSetup(SETUP)).toBe(false);
      await mkdir(join(ws.dir, 'node_modules', 'dep'), { recursive: true });
      await writeFile(join(ws.dir, 'node_modules', 'dep', 'index.js'), marker);
      await ws.preserveIgnored();
      await ws.saveSetup(SETUP);
    };
    await setUp(make('g1'), 'old');

    // Someone changes package.json on main: the output setup made for the old one must not come back.
    const clone = join(root, 'push');
    git(root, 'clone', '-q', repo.bare, clone);
    await writeFile(join(clone, 'package.json'), '{"name":"changed","version":"2.0.0"}\n');
    git(clone, '-c', 'user.name=a', '-c', 'user.email=a@a', 'commit', '-qam', 'bump');
    git(clone, 'push', '-q', 'origin', 'HEAD');
    await setUp(make('g2'), 'new');

    const third = make('g3');
    await third.prepare();
    expect(await third.restoreSetup(SETUP)).toBe(true);
    expect(readdirSync(join(third.dir, 'node_modules', 'dep'))).toEqual(['index.js']);
    expect(git(third.dir, 'show', 'HEAD:package.json')).toContain('changed');
    expect(readFileSync(join(third.dir, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe('new');
  });

  it("attack: a ready copy's folder listing spares the first checkpoint reading the restored folders, never a repository planted after the listing", async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const setupCache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30, readyCopyDelayMs: 0 });
    const make = (id: string, memo = new NestedScanMemo()) => ({ memo, ws: setupWorkspace(root, repo.bare, id, setupCache, memo) });
    const { ws: first } = make('g1');
    await first.prepare();
    expect(await first.restoreSetup(SETUP)).toBe(false);
    for (let i = 0; i < 20; i++) {
      await mkdir(join(first.dir, 'node_modules', `dep${i}`, 'lib'), { recursive: true });
      await writeFile(join(first.dir, 'node_modules', `dep${i}`, 'lib', 'index.js'), 'x');
    }
    await first.preserveIgnored();
    await first.saveSetup(SETUP);
    await setupCache.idle(); // the ready copy, listed
    const [repoDir] = await readdir(join(root, 'cache'));
    const [entry] = (await readdir(join(root, 'cache', repoDir!))).filter((n) => /^[0-9a-f]{64}$/.test(n));
    const readyCopy = async () => join(root, 'cache', repoDir!, entry!, (await readdir(join(root, 'cache', repoDir!, entry!))).find((n) => n.startsWith('ready-'))!);
    const readsOfFirstCheckpoint = async (id: string) => {
      const { ws, memo } = make(id);
      await ws.prepare();
      expect(await ws.restoreSetup(SETUP)).toBe(true);
      await ws.preserveIgnored();
      await writeFile(join(ws.dir, 'task.txt'), '1');
      const before = memo.reads;
      await ws.checkpoint({ goalId: id, taskId: 't1', title: 't', attempt: 1 });
      await setupCache.idle(); // the next ready copy
      return memo.reads - before;
    };
    // With the listing: the tree's own folders and node_modules (moved in: its ctime changed); without it, all 40 more.
    expect(existsSync(join(await readyCopy(), 'folders'))).toBe(true);
    expect(await readsOfFirstCheckpoint('g2')).toBeLessThan(10);
    await rm(join(await readyCopy(), 'folders'));
    expect(await readsOfFirstCheckpoint('g3')).toBeGreaterThan(40);

    // Planted by a task deep in a listed folder, after the restore.
    const { ws: fourth } = make('g4');
    await fourth.prepare();
    expect(await fourth.restoreSetup(SETUP)).toBe(true);
    await fourth.preserveIgnored();
    await plantRepository(join(fourth.dir, 'node_modules', 'dep7', 'lib'));
    await writeFile(join(fourth.dir, 'task.txt'), '1');
    await expect(fourth.checkpoint({ goalId: 'g4', taskId: 't1', title: 't', attempt: 1 })).rejects.toBeInstanceOf(NestedRepositoryError);
    // Planted in the waiting ready copy itself, after its listing was written.
    await setupCache.idle();
    expect(existsSync(join(await readyCopy(), 'folders'))).toBe(true);
    await plantRepository(join(await readyCopy(), 'tree', 'node_modules', 'dep3', 'lib'));
    const { ws: fifth } = make('g5');
    await fifth.prepare();
    expect(await fifth.restoreSetup(SETUP)).toBe(true);
    expect(existsSync(join(fifth.dir, 'node_modules', 'dep3', 'lib', '.git'))).toBe(true); // the ready copy moved in
    await fifth.preserveIgnored();
    await writeFile(join(fifth.dir, 'task.txt'), '1');
    await expect(fifth.checkpoint({ goalId: 'g5', taskId: 't1', title: 't', attempt: 1 })).rejects.toBeInstanceOf(NestedRepositoryError);
  });

  it('a ready copy waits out its delay after a save, and `idle` starts it at once', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30, readyCopyDelayMs: 10 * 60 * 1000 });
    await mkdir(join(root, 'ws', 'node_modules', 'dep'), { recursive: true });
    await writeFile(join(root, 'ws', 'node_modules', 'dep', 'index.js'), 'x');
    const key = SetupCache.key({ base: 'main', commands: ['npm ci'], network: false, inputs: [] });
    await cache.save('https://x/app.git', key, join(root, 'ws'), ['node_modules/']);
    const [repoDir] = await readdir(join(root, 'cache'));
    const entry = join(root, 'cache', repoDir!, key);
    const readyCopies = async () => (await readdir(entry)).filter((n) => n.startsWith('ready-'));
    expect(await readyCopies()).toEqual([]);
    await cache.idle();
    expect(await readyCopies()).toHaveLength(1);
  });
});
