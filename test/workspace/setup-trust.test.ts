import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { MirrorCache } from '../../src/workspace/mirror-cache.js';
import { SetupCache } from '../../src/workspace/setup-cache.js';
import { git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

const SETUP = { commands: ['sh setup.sh'], network: false };

/** A workspace with a setup cache, prepared; `entries()` lists what the cache kept. */
async function prepared(opts: { baseBranch?: string } = {}) {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  git(repo.bare, 'branch', 'goal/other', 'main'); // another goal's branch (no task commit needed to refuse it)
  const cacheRoot = join(root, 'setup-cache');
  const ws = new GitWorkspace({
    remote: repo.bare,
    dir: join(root, 'ws'),
    goalId: 'g1',
    branch: 'goal/g1',
    identity: { name: 'goal-loop', email: 'bot@example.com' },
    setupCache: new SetupCache({ root: cacheRoot, maxBytes: 1 << 30, readyCopies: false }),
    setupInputs: ['package.json'],
    ...opts,
  });
  await ws.prepare();
  const entries = () => (existsSync(cacheRoot) ? readdirSync(cacheRoot).flatMap((r) => readdirSync(join(cacheRoot, r))) : []);
  /** What the loop does around setup: restore (a miss), "run" it, record, save. */
  const runSetup = async (before: () => Promise<void> = async () => undefined) => {
    await before();
    expect(await ws.restoreSetup(SETUP)).toBe(false);
    await mkdir(join(ws.dir, 'deps'), { recursive: true });
    await writeFile(join(ws.dir, 'deps', 'lib.txt'), 'built\n');
    await ws.preserveIgnored();
    await ws.saveSetup(SETUP);
  };
  return { ws, entries, runSetup };
}

describe('what the setup cache keeps', () => {
  it('the output of setup on the freshly checked-out base commit', async () => {
    const { entries, runSetup } = await prepared();
    await runSetup();
    expect(entries()).toHaveLength(1);
  });

  it('nothing when the tree held more than the base commit when setup ran', async () => {
    const { ws, entries, runSetup } = await prepared();
    await runSetup(() => writeFile(join(ws.dir, 'setup.sh'), 'echo planted\n'));
    expect(entries()).toEqual([]);
  });

  it('nothing when the base is a goal branch, even one holding the same commit as main', async () => {
    const { entries, runSetup } = await prepared({ baseBranch: 'goal/other' });
    await runSetup();
    expect(entries()).toEqual([]);
  });

  // Prepare notes a parked tree's gitlinks as it empties their folders; the look before setup
  // takes them from there instead of asking git again, and still sees what a folder holds.
  it('nothing when a submodule folder of a reused (parked) tree held a file when setup ran; the output when it was empty', async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const sub = git(repo.work, 'rev-parse', 'HEAD');
    git(repo.work, 'update-index', '--add', '--cacheinfo', `160000,${sub},vendor/lib`);
    git(repo.work, '-c', 'user.name=Human', '-c', 'user.email=h@example.com', 'commit', '--quiet', '-m', 'a submodule');
    git(repo.work, 'push', '--quiet', 'origin', 'main');
    const parkCache = new MirrorCache({ dir: join(root, 'mirrors'), warmMinFiles: 0 });
    const cacheRoot = join(root, 'setup-cache');
    const setupCache = new SetupCache({ root: cacheRoot, maxBytes: 1 << 30, readyCopies: false });
    const entries = () => (existsSync(cacheRoot) ? readdirSync(cacheRoot).flatMap((r) => readdirSync(join(cacheRoot, r))) : []);
    const make = (goalId: string) =>
      new GitWorkspace({
        remote: repo.bare,
        dir: join(root, 'ws', goalId),
        goalId,
        branch: `goal/${goalId}`,
        identity: { name: 'goal-loop', email: 'bot@example.com' },
        parkCache,
        setupCache,
        setupInputs: ['package.json'],
      });
    const setupIn = async (ws: GitWorkspace, before: () => Promise<void>) => {
      await ws.prepare();
      await before();
      expect(await ws.restoreSetup(SETUP)).toBe(false);
      await mkdir(join(ws.dir, 'deps'), { recursive: true });
      await writeFile(join(ws.dir, 'deps', 'lib.txt'), 'built\n');
      await ws.preserveIgnored();
      await ws.saveSetup(SETUP);
      await ws.release?.();
    };
    await setupIn(make('g1'), () => writeFile(join(root, 'ws', 'g1', 'vendor', 'lib', 'planted.sh'), 'echo planted\n'));
    expect(entries()).toEqual([]);
    // g2 takes the tree g1 parked: its submodule folder is emptied and noted.
    await setupIn(make('g2'), () => writeFile(join(root, 'ws', 'g2', 'vendor', 'lib', 'planted.sh'), 'echo planted\n'));
    expect(entries()).toEqual([]);
    await setupIn(make('g3'), async () => expect(readdirSync(join(root, 'ws', 'g3', 'vendor', 'lib'))).toEqual([]));
    expect(entries()).toHaveLength(1);
  });
});
