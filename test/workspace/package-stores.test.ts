import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, realpathSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { detectPackageManagers, packageStoreEnv } from '../../src/workspace/package-managers.js';
import { PackageStores } from '../../src/workspace/package-stores.js';
import { git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

const MB = 1024 * 1024;

describe('package managers, from the names at the top of the tree', () => {
  it('detects each from its lockfile, yarn berry by its .yarnrc.yml, npm for a package.json alone', () => {
    const cases: [string[], string[]][] = [
      [['pnpm-lock.yaml', 'package.json'], ['pnpm']],
      [['yarn.lock'], ['yarn-classic']],
      [['yarn.lock', '.yarnrc.yml'], ['yarn-berry']],
      [['package-lock.json'], ['npm']],
      [['npm-shrinkwrap.json'], ['npm']],
      [['bun.lockb'], ['bun']],
      [['package.json'], ['npm']],
      [
        ['pnpm-lock.yaml', 'package-lock.json'],
        ['pnpm', 'npm'],
      ],
      [['requirements.txt', 'Cargo.lock'], []],
      [[], []],
    ];
    for (const [names, managers] of cases) expect(detectPackageManagers(new Set(names)), names.join(' ')).toEqual(managers);
  });

  it("points only the detected managers at the store (npm warns about settings it does not know), and leaves berry's project cache alone", () => {
    expect(packageStoreEnv(['npm'], '/s')).toEqual({ COREPACK_HOME: '/s/corepack', npm_config_cache: '/s/npm' });
    expect(packageStoreEnv(['pnpm'], '/s')).toEqual({ COREPACK_HOME: '/s/corepack', npm_config_store_dir: '/s/pnpm', pnpm_config_store_dir: '/s/pnpm', PNPM_HOME: '/s/pnpm-home' });
    // Plug'n'Play loads from the project's cache: it stays in the tree, where tasks can read it.
    expect(packageStoreEnv(['yarn-berry'], '/s')).toEqual({ COREPACK_HOME: '/s/corepack', YARN_GLOBAL_FOLDER: '/s/yarn-berry', YARN_ENABLE_GLOBAL_CACHE: 'false' });
    expect(packageStoreEnv(['yarn-classic'], '/s')).toMatchObject({ YARN_CACHE_FOLDER: '/s/yarn' });
    expect(packageStoreEnv(['bun'], '/s')).toMatchObject({ BUN_INSTALL_CACHE_DIR: '/s/bun' });
  });
});

describe('package stores: one per repository and base, outside every workspace', () => {
  it('a trusted setup gets its repository’s kept store; another repository or base another; an untrusted one a throwaway that goes', async () => {
    const root = await tempDir();
    const stores = new PackageStores({ root, maxBytes: 100 * MB });
    const a = await stores.claim('https://example.com/o/a.git', 'main', true);
    expect(a.kept).toBe(true);
    writeFileSync(join(a.dir, 'pkg'), 'a');
    await a.release();
    const again = await stores.claim('https://example.com/o/a.git', 'main', true);
    expect(again.dir).toBe(a.dir);
    expect(existsSync(join(again.dir, 'pkg'))).toBe(true);
    await again.release();

    const other = await stores.claim('https://example.com/o/b.git', 'main', true);
    const feature = await stores.claim('https://example.com/o/a.git', 'feature-x', true);
    expect(new Set([a.dir, other.dir, feature.dir]).size).toBe(3);
    expect(existsSync(join(other.dir, 'pkg'))).toBe(false);
    expect(existsSync(join(feature.dir, 'pkg'))).toBe(false);
    await other.release();
    await feature.release();

    const untrusted = await stores.claim('https://example.com/o/a.git', 'main', false);
    expect(untrusted.kept).toBe(false);
    expect(existsSync(join(untrusted.dir, 'pkg'))).toBe(false);
    writeFileSync(join(untrusted.dir, 'pkg'), 'poison');
    await untrusted.release();
    expect(existsSync(untrusted.dir)).toBe(false);
    expect(await stores.count()).toBe(3);
  });

  it('hands out stores by their real path when the workspace root is reached through a link (the jail binds only a real path)', async () => {
    const root = await tempDir();
    mkdirSync(join(root, 'real'));
    symlinkSync(join(root, 'real'), join(root, 'link'));
    const stores = new PackageStores({ root: join(root, 'link', 'package-stores'), maxBytes: 100 * MB });
    for (const trusted of [true, false]) {
      const c = await stores.claim('/r/app', 'main', trusted);
      expect(c.dir.startsWith(join(root, 'real', 'package-stores'))).toBe(true);
      expect(realpathSync(c.dir)).toBe(c.dir);
      await c.release();
    }
  });

  it('while one setup holds the store, a second of the same repository gets a throwaway (two jail uids cannot share it)', async () => {
    const root = await tempDir();
    const stores = new PackageStores({ root, maxBytes: 100 * MB });
    const first = await stores.claim('/r/app', 'main', true);
    const second = await stores.claim('/r/app', 'main', true);
    expect(first.kept).toBe(true);
    expect(second.kept).toBe(false);
    expect(second.dir).not.toBe(first.dir);
    await second.release();
    await first.release();
    const third = await stores.claim('/r/app', 'main', true);
    expect(third.dir).toBe(first.dir);
    await third.release();
  });

  it('bounded: the least recently used store goes first, never one a setup holds, and a store over the bound on its own is emptied', async () => {
    const root = await tempDir();
    const stores = new PackageStores({ root, maxBytes: 3 * MB });
    const fill = async (repo: string, mb: number) => {
      const c = await stores.claim(repo, 'main', true);
      writeFileSync(join(c.dir, 'blob'), Buffer.alloc(mb * MB, 1));
      return c;
    };
    const old = await fill('/r/old', 1);
    await old.release();
    await new Promise((r) => setTimeout(r, 20)); // distinct last-use times
    const held = await fill('/r/held', 1);
    const fresh = await fill('/r/fresh', 1.5);
    await fresh.release(); // 1 + 1.5 counted (held is not measured yet): under the bound
    expect(existsSync(old.dir)).toBe(true);
    await held.release(); // 3.5 MB: the oldest goes
    expect(existsSync(old.dir)).toBe(false);
    expect(existsSync(held.dir)).toBe(true);
    expect(existsSync(fresh.dir)).toBe(true);

    const huge = await fill('/r/huge', 4);
    await huge.release();
    expect(existsSync(join(huge.dir, 'blob'))).toBe(false);
    expect(await stores.totalBytes()).toBeLessThanOrEqual(3 * MB);
  });

  it('never measures nor evicts what it did not make: a GitHub goal workspace named like owner "package", repo "stores" survives', async () => {
    const root = await tempDir();
    const stores = new PackageStores({ root, maxBytes: 0 });
    const goalWorkspace = join(root, '12'); // `<workspaces>/package-stores/12` for package/stores#12
    mkdirSync(goalWorkspace);
    writeFileSync(join(goalWorkspace, 'bytes'), String(10 * MB));
    await stores.evict({ all: true });
    expect(existsSync(goalWorkspace)).toBe(true);
    expect(await stores.count()).toBe(0);
  });

  it('with a bound of 0 every setup gets a throwaway; eviction of everything skips a held store', async () => {
    const root = await tempDir();
    expect((await new PackageStores({ root, maxBytes: 0 }).claim('/r/app', 'main', true)).kept).toBe(false);
    const stores = new PackageStores({ root, maxBytes: MB });
    const held = await stores.claim('/r/app', 'main', true);
    const done = await stores.claim('/r/lib', 'main', true);
    await done.release();
    await stores.evict({ all: true });
    expect(existsSync(held.dir)).toBe(true);
    expect(existsSync(done.dir)).toBe(false);
    await held.release();
  });

  it('attack: a base whose name was searched to share the first hex of its hash with another base still gets a store of its own', async () => {
    // sha256 of both names starts 41c8aad5: found by trying names (a base a caller names, approved over MCP).
    const root = await tempDir();
    const stores = new PackageStores({ root, maxBytes: 100 * MB });
    const planted = await stores.claim('/r/app', 'feature-118203', true);
    writeFileSync(join(planted.dir, 'poisoned-tarball'), 'evil');
    await planted.release();
    const victim = await stores.claim('/r/app', 'feature-117842', true);
    expect(victim.kept).toBe(true);
    expect(victim.dir).not.toBe(planted.dir);
    expect(existsSync(join(victim.dir, 'poisoned-tarball'))).toBe(false);
    await victim.release();
    expect(await stores.count()).toBe(2);
  });

  it('attack: a folder setup made unreadable (chmod 000, its own uid when the bot is not root) is still removed, measured and evicted', async () => {
    const root = await tempDir();
    // The host as a non-root bot: the jail runs as the bot's own uid, and the bot has no override.
    const asBot = process.getuid?.() === 0 ? 65534 : undefined;
    if (asBot !== undefined) chownSync(root, asBot, asBot);
    const stores = new PackageStores({ root: join(root, 'stores'), maxBytes: 100 * MB });
    const lock = (dir: string) => {
      mkdirSync(join(dir, 'npm', 'locked', 'deep'), { recursive: true });
      writeFileSync(join(dir, 'npm', 'locked', 'deep', 'blob'), Buffer.alloc(MB, 1));
      chmodSync(join(dir, 'npm', 'locked'), 0o000);
    };
    if (asBot !== undefined) {
      process.setegid?.(asBot);
      process.seteuid?.(asBot);
    }
    try {
      const throwaway = await stores.claim('/r/app', 'main', false);
      lock(throwaway.dir);
      await throwaway.release();
      expect(existsSync(throwaway.dir)).toBe(false);
      const kept = await stores.claim('/r/app', 'main', true);
      lock(kept.dir);
      await kept.release();
      expect(await stores.totalBytes()).toBeGreaterThanOrEqual(MB);
      await stores.evict({ all: true });
      expect(await stores.count()).toBe(0);
      expect(readdirSync(join(root, 'stores'))).toEqual([]);
    } finally {
      if (asBot !== undefined) {
        process.seteuid?.(0);
        process.setegid?.(0);
      }
    }
  });

  it('attack: a setup that dates its own throwaway store back a day does not get it removed under it by another goal’s eviction', async () => {
    const root = await tempDir();
    const throwaway = await new PackageStores({ root, maxBytes: 100 * MB }).claim('/r/app', 'main', false);
    mkdirSync(join(throwaway.dir, 'npm', 'pkg'), { recursive: true });
    // The store is the jail's own folder (bound at this path): `touch -d '2 days ago'` on it works.
    const twoDaysAgo = new Date(Date.now() - 48 * 3_600_000);
    utimesSync(throwaway.dir, twoDaysAgo, twoDaysAgo);
    // Removing a tree a jailed process still changes follows any link it swaps in for a folder.
    await new PackageStores({ root, maxBytes: 100 * MB }).evict({ all: true });
    expect(existsSync(join(throwaway.dir, 'npm', 'pkg'))).toBe(true);
    await throwaway.release();
    expect(existsSync(throwaway.dir)).toBe(false);
    expect(readdirSync(root)).toEqual([]);
  });

  it('strips set-id bits from what setup left in the kept store', async () => {
    const root = await tempDir();
    const stores = new PackageStores({ root, maxBytes: 100 * MB });
    const c = await stores.claim('/r/app', 'main', true);
    const file = join(c.dir, 'tool');
    writeFileSync(file, '#!/bin/sh\n');
    chmodSync(file, 0o4755);
    await c.release();
    expect(statSync(file).mode & 0o6000).toBe(0);
  });
});

describe('the workspace gives setup a package store', () => {
  async function prepared(opts: { branch?: string } = {}) {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const storesRoot = join(root, 'stores');
    const make = (branch: string) =>
      new GitWorkspace({
        remote: repo.bare,
        dir: join(root, 'ws', branch.replace('/', '-')),
        goalId: 'g1',
        branch,
        identity: { name: 'goal-loop', email: 'bot@example.com' },
        packageStores: new PackageStores({ root: storesRoot, maxBytes: 100 * MB }),
      });
    const ws = make(opts.branch ?? 'goal/g1');
    await ws.prepare();
    return { root, repo, ws, make, storesRoot };
  }

  it('on the base commit: the kept store, with the variables for the managers its lockfiles name', async () => {
    const { ws } = await prepared();
    const grant = await ws.packageStore();
    expect(grant?.kept).toBe(true);
    expect(grant?.managers).toEqual(['npm']);
    expect(grant?.env.npm_config_cache).toBe(join(grant!.dir, 'npm'));
    expect(grant!.dir.startsWith(ws.dir)).toBe(false);
    await grant?.release();
  });

  it('attack: setup on a goal branch a task wrote cannot plant a file in the store the next goal installs from', async () => {
    const { repo, make } = await prepared();
    // A task's checkpoint on the goal branch (say, a changed install script) makes its setup untrusted.
    const seed = make('goal/g1');
    await seed.prepare();
    await writeFile(join(seed.dir, 'postinstall.sh'), 'echo planted\n');
    await seed.checkpoint({ goalId: 'g1', taskId: 't1', title: 'plant', attempt: 1 });
    const resumed = make('goal/g1');
    await resumed.prepare();
    const grant = await resumed.packageStore();
    expect(grant?.kept).toBe(false);
    await mkdir(join(grant!.dir, 'npm'), { recursive: true });
    await writeFile(join(grant!.dir, 'npm', 'poisoned-tarball'), 'evil');
    await grant?.release();

    const next = make('goal/g2');
    await next.prepare();
    const clean = await next.packageStore();
    expect(clean?.kept).toBe(true);
    expect(existsSync(join(clean!.dir, 'npm', 'poisoned-tarball'))).toBe(false);
    await clean?.release();
    expect(git(repo.bare, 'branch', '--list', 'goal/g1')).toContain('goal/g1');
  });

  it('attack: a tree holding more than the base commit (an untracked file) gets a throwaway', async () => {
    const { ws } = await prepared();
    await writeFile(join(ws.dir, '.npmrc'), 'cache=/elsewhere\n');
    const grant = await ws.packageStore();
    expect(grant?.kept).toBe(false);
    await grant?.release();
  });

  it('attack: what a task left in a submodule folder (which git status and clean never show) makes the next setup on the base untrusted', async () => {
    const { repo, make } = await prepared();
    // The repository has a submodule; goal-loop never fills it, so its folder is empty after a checkout.
    const sha = git(repo.work, 'rev-parse', 'HEAD');
    git(repo.work, 'update-index', '--add', '--cacheinfo', `160000,${sha},vendor/lib`);
    git(repo.work, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'submodule');
    git(repo.work, 'push', '-q', 'origin', 'main');
    const first = make('goal/g3');
    await first.prepare();
    // A task of this goal writes there; nothing is checkpointed, and the goal runs again on the base.
    await writeFile(join(first.dir, 'vendor', 'lib', 'index.js'), 'planted\n');
    const rerun = make('goal/g3');
    await rerun.prepare();
    expect(existsSync(join(rerun.dir, 'vendor', 'lib', 'index.js'))).toBe(true);
    const grant = await rerun.packageStore();
    expect(grant?.kept).toBe(false);
    await grant?.release();
  });

  it('none for a tree with no JavaScript manifest', async () => {
    const root = await tempDir();
    const bare = join(root, 'bare.git');
    const src = join(root, 'src');
    mkdirSync(src);
    git(src, 'init', '-q', '-b', 'main');
    writeFileSync(join(src, 'requirements.txt'), 'requests\n');
    git(src, 'add', '.');
    git(src, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'init');
    git(root, 'clone', '-q', '--bare', src, bare);
    const ws = new GitWorkspace({
      remote: bare,
      dir: join(root, 'ws'),
      goalId: 'g',
      branch: 'goal/g',
      identity: { name: 'goal-loop', email: 'bot@example.com' },
      packageStores: new PackageStores({ root: join(root, 'stores'), maxBytes: MB }),
    });
    await ws.prepare();
    expect(await ws.packageStore()).toBeUndefined();
    expect(existsSync(join(root, 'stores')) ? readdirSync(join(root, 'stores')) : []).toEqual([]);
  });
});
