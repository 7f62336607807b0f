import { createHash, randomBytes } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import type { Logger } from 'pino';
import { z } from 'zod';
import { type FolderListing, readFolderListing } from './folder-listing.js';
import { repoFolderName } from './repo-folder.js';
import { diskUsage, stripSetIds } from './setup-disk.js';
import { detachReadyCopy, makeReadyCopy, moveInto, readyCopiesSettled, readyCopyNames, STALE_LEFTOVER_MS, takeReadyCopy } from './setup-ready-copies.js';

const DEFAULT_SETUP_CACHE_MB = 4096;
/** How long a ready copy waits after the save or restore that calls for it (see makeReadyCopy). */
const READY_COPY_DELAY_MS = 2000;

/**
 * What an entry says of itself; written last, so an entry without it is incomplete. Version 2:
 * saved only from setup on the base commit, set-id bits stripped, sized by blocks; an entry of
 * an earlier version is never restored (it may hold what a goal branch's setup made) and goes.
 */
const ManifestSchema = z.strictObject({
  version: z.literal(2),
  key: z.string().regex(/^[0-9a-f]{64}$/),
  paths: z.array(z.string().min(1)),
  /** Blocks in use (not the sizes files claim): what the entry costs the disk. */
  bytes: z.number().int().nonnegative(),
  /** Of `paths`, the folders git showed untracked (not ignored) when saved: a hint for the first look after a restore. */
  untracked: z.array(z.string().min(1)).optional(),
});
type Manifest = z.infer<typeof ManifestSchema>;

/** What a restore put back into a workspace. */
export interface RestoredSetup {
  /** Relative paths, outermost only. */
  paths: readonly string[];
  /** Of those, the folders that were untracked (not ignored) when the entry was saved. */
  untrackedDirs: readonly string[];
  /** The ready copy's folder listing, when one moved in (see folder-listing.ts). */
  listing?: FolderListing;
}

export interface SetupCacheOptions {
  /** Folder of the entries: `<root>/<repository>/<key>/{tree,manifest.json}`. */
  root: string;
  /**
   * Bound on all entries together (ready copies included), in blocks in use; the least recently
   * used go first. A setup output over it on its own is not kept at all.
   */
  maxBytes: number;
  /** Keep a ready copy of each entry, made in the background, that a restore moves in (default on). */
  readyCopies?: boolean;
  /** How long after a save or restore its ready copy starts (default 2 s; `idle` starts one made in this process at once). */
  readyCopyDelayMs?: number;
  /**
   * Make ready copies in a detached process instead of this one: for a one-shot process
   * (`goal-loop run`) that must exit with its output, not wait for a copy. The bound is then
   * restored by the next save or eviction, not right after the copy.
   */
  detachReadyCopies?: boolean;
  logger?: Logger;
}

/**
 * What setup produced (dependencies, a package store, a rewritten lockfile), kept per repository
 * and per key (the base branch, the setup commands and the blobs of the files they read), so the next run or the
 * next goal on the repository puts it back instead of installing again. Entries are data: copied
 * with `cp -a` (symlinks stay links, nothing is followed), never run or interpreted by the host.
 * A restore moves in a ready copy made in the background (setup-ready-copies.ts), so a hit costs
 * a rename, not a copy of the dependencies.
 */
export class SetupCache {
  private movable = true;

  constructor(private readonly opts: SetupCacheOptions) {}

  /** `<workspaces>/setup-cache`, bounded by GOAL_LOOP_SETUP_CACHE_MB (0 turns it off). */
  static fromEnv(workspaceRoot: string, env: NodeJS.ProcessEnv = process.env, logger?: Logger, extra: Pick<SetupCacheOptions, 'detachReadyCopies'> = {}): SetupCache | undefined {
    const raw = env.GOAL_LOOP_SETUP_CACHE_MB;
    const mb = raw === undefined || raw === '' ? DEFAULT_SETUP_CACHE_MB : Number(raw);
    if (!Number.isFinite(mb) || mb < 0) throw new Error(`GOAL_LOOP_SETUP_CACHE_MB must be a number of megabytes (got "${raw}")`);
    if (mb === 0) return undefined;
    return new SetupCache({ root: join(workspaceRoot, 'setup-cache'), maxBytes: Math.round(mb * 1024 * 1024), ...extra, ...(logger ? { logger } : {}) });
  }

  /**
   * The key of a setup: the base branch it ran on (one base's output is never another's), its
   * commands, whether it had the network, and the blobs of its inputs. Version 3 added the base:
   * no key of an earlier version is computed again, so their entries only age out.
   */
  static key(parts: { base: string; commands: readonly string[]; network: boolean; inputs: ReadonlyArray<readonly [path: string, blob: string]> }): string {
    return createHash('sha256')
      .update(JSON.stringify({ v: 3, ...parts }))
      .digest('hex');
  }

  /**
   * Copies the entry for `key` into `dir`: `missing` when there is none (or it cannot go there
   * safely), `failed` when the copy broke midway (the caller resets the tree). An entry that does
   * not read back whole (no manifest, a listed path missing, a failed copy) is removed.
   */
  async restore(repo: string, key: string, dir: string, opts: { onRestored?: (restored: RestoredSetup) => void } = {}): Promise<'restored' | 'missing' | 'failed'> {
    const entry = join(this.repoDir(repo), key);
    const manifest = await this.readManifest(entry);
    if (!manifest) {
      await discard(entry);
      return 'missing';
    }
    const now = new Date();
    await utimes(join(entry, 'manifest.json'), now, now).catch(() => undefined); // recently used: not the next to go
    manifest.paths = outermost(manifest.paths);
    // Only into places that are plainly free: a parent that is a symlink (or a path already there
    // as a folder or link) could send the host's copy outside the workspace; then setup runs.
    if (!manifest.paths.every((p) => parentsAreFolders(dir, p) && freeOrFile(join(dir, p)))) return 'missing';
    try {
      for (const p of manifest.paths) lstatSync(join(entry, 'tree', p));
    } catch {
      this.opts.logger?.warn({ entry }, 'a setup cache entry is incomplete; it is removed and setup runs');
      await discard(entry);
      return 'missing';
    }
    let how: 'moved' | 'copied' = 'copied';
    let listing: FolderListing | undefined;
    try {
      // A ready copy moves in (a rename per path); else the entry is copied, which costs its size.
      const ready = await takeReadyCopy(entry, manifest.paths);
      if (ready) {
        try {
          if (await moveInto(ready, dir, manifest.paths)) {
            how = 'moved';
            // The moved folders keep their inodes and ctimes: what the copy's listing says of them holds.
            listing = await readFolderListing(join(ready, 'folders'));
          } else this.movable = false; // the workspaces are on another filesystem: copies cannot move
        } finally {
          await rm(ready, { recursive: true, force: true }); // claimed: nobody else has it
        }
      }
      if (how === 'copied') {
        for (const p of manifest.paths) {
          await mkdir(dirname(join(dir, p)), { recursive: true });
          await execa('cp', ['-a', '--reflink=auto', '--remove-destination', '--', join(entry, 'tree', p), join(dir, p)]);
        }
        // The entry has none; but no set-id file reaches a workspace whatever the entry holds.
        await stripSetIds(manifest.paths.map((p) => join(dir, p)));
      }
      this.opts.logger?.debug({ entry, how }, 'setup output restored');
      this.prepareNext(entry, manifest);
      opts.onRestored?.({ paths: manifest.paths, untrackedDirs: manifest.untracked ?? [], ...(listing ? { listing } : {}) });
      return 'restored';
    } catch (err) {
      this.opts.logger?.warn({ err, entry }, 'a setup cache entry does not read back; it is removed and setup runs');
      await discard(entry);
      return 'failed';
    }
  }

  /**
   * Keeps `paths` of `dir` (setup's output, relative) under `key`, then evicts down to the bound.
   * The caller vouches that setup ran on the tree every goal with this key starts from (see
   * GitWorkspace.saveSetup): the key names the setup, not the files it read.
   */
  async save(repo: string, key: string, dir: string, paths: readonly string[], untrackedDirs: readonly string[] = []): Promise<void> {
    await mkdir(this.repoDir(repo), { recursive: true });
    // Read through no link a task or setup planted on the way (it could point at host files).
    const safe = outermost(
      paths.map((p) => p.replace(/\/$/, '')).filter((p) => p && !p.startsWith('/') && !p.split('/').includes('..') && p !== '.git' && !p.startsWith('.git/') && parentsAreFolders(dir, p)),
    );
    if (safe.length === 0) return;
    const repoDir = this.repoDir(repo);
    const entry = join(repoDir, key);
    if (await this.readManifest(entry)) return;
    // Measured before anything is copied, by blocks in use: sparse files that claim gigabytes cost
    // nothing to make, and must not evict every other repository's entries. What claims more than
    // the bound is not kept either: a copy that writes its holes out would fill the disk.
    const size = await diskUsage(safe.map((p) => join(dir, p))).catch((err: unknown) => {
      this.opts.logger?.warn({ err, repo }, 'cannot measure setup output; it is not kept in the setup cache');
      return undefined;
    });
    if (!size) return;
    if (size.allocated > this.opts.maxBytes || size.apparent > this.opts.maxBytes) {
      this.opts.logger?.info({ repo, ...size, maxBytes: this.opts.maxBytes }, 'setup output is larger than the setup cache bound; it is not kept');
      return;
    }
    const tmp = join(repoDir, `.tmp-${randomBytes(6).toString('hex')}`);
    try {
      for (const p of safe) {
        await mkdir(join(tmp, 'tree', dirname(p)), { recursive: true });
        await execa('cp', ['-a', '--reflink=auto', '--', join(dir, p), join(tmp, 'tree', p)]);
      }
      // In the host's own folder: nothing else writes there, so no race between find and chmod.
      await stripSetIds([join(tmp, 'tree')]);
      const { allocated } = await diskUsage([join(tmp, 'tree')]);
      if (allocated > this.opts.maxBytes) {
        this.opts.logger?.info({ repo, allocated, maxBytes: this.opts.maxBytes }, 'the copy of setup output is larger than the setup cache bound; it is not kept');
        return;
      }
      const untracked = untrackedDirs.map((p) => p.replace(/\/+$/, '')).filter((p) => safe.includes(p));
      const manifest: Manifest = { version: 2, key, paths: safe, bytes: allocated, ...(untracked.length > 0 ? { untracked } : {}) };
      await writeFile(join(tmp, 'manifest.json'), JSON.stringify(manifest));
      await discard(entry);
      await rename(tmp, entry);
      this.prepareNext(entry, manifest);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    await this.evict();
  }

  /** Says why a setup's output is not kept (the caller decided it may not be). */
  notKept(repo: string, reason: string): void {
    this.opts.logger?.info({ repo, reason }, 'setup output not kept in the setup cache');
  }

  /** Every ready copy this process is making, done (for a clean exit, and for measurements). */
  idle(): Promise<void> {
    return readyCopiesSettled();
  }

  /** In the background: a ready copy for the next restore, when the bound leaves room for one. */
  private prepareNext(entry: string, manifest: Manifest): void {
    if (this.opts.readyCopies === false || !this.movable) return;
    const hasRoom = async () => (await this.totalBytes()) + manifest.bytes <= this.opts.maxBytes;
    const onError = (err: unknown) => this.opts.logger?.warn({ err, entry }, 'cannot make a ready copy of a setup cache entry; the next restore copies it');
    const delayMs = this.opts.readyCopyDelayMs ?? READY_COPY_DELAY_MS;
    if (this.opts.detachReadyCopies) {
      void detachReadyCopy(entry, manifest.paths, hasRoom, onError, delayMs);
      return;
    }
    void makeReadyCopy(entry, manifest.paths, hasRoom, onError, delayMs)
      // Several makers may have passed `hasRoom` at once: the bound is restored afterwards.
      .then(() => this.evict())
      .catch((err: unknown) => this.opts.logger?.warn({ err }, 'setup cache eviction failed'));
  }

  private async totalBytes(): Promise<number> {
    return (await this.scan()).reduce((n, e) => n + e.bytes * (1 + e.readyCopies.length), 0);
  }

  /**
   * While all entries and their ready copies exceed the bound: drops ready copies (the least
   * recently used entry's first), then entries. Also removes what a killed process left half
   * made more than an hour ago.
   */
  async evict(): Promise<void> {
    const entries = (await this.scan()).sort((a, b) => a.usedAt - b.usedAt);
    let total = entries.reduce((n, e) => n + e.bytes * (1 + e.readyCopies.length), 0);
    for (const e of entries) {
      for (const copy of e.readyCopies) {
        if (total <= this.opts.maxBytes) return;
        await discard(copy); // claimed first, as a restore claims: never one being moved out
        total -= e.bytes;
      }
    }
    for (const e of entries) {
      if (total <= this.opts.maxBytes) return;
      await discard(e.path);
      total -= e.bytes;
      this.opts.logger?.info({ entry: e.path, bytes: e.bytes }, 'setup cache entry evicted');
    }
  }

  /** Every whole entry, with its size, last use and ready copies; stale leftovers go on the way. */
  private async scan(): Promise<Array<{ path: string; bytes: number; usedAt: number; readyCopies: string[] }>> {
    const entries: Array<{ path: string; bytes: number; usedAt: number; readyCopies: string[] }> = [];
    for (const repo of await readdir(this.opts.root).catch(() => [] as string[])) {
      for (const key of await readdir(join(this.opts.root, repo)).catch(() => [] as string[])) {
        const path = join(this.opts.root, repo, key);
        if (key.startsWith('.tmp-')) {
          await removeIfStale(path);
          continue;
        }
        const manifest = await this.readManifest(path);
        if (!manifest) {
          // Entries appear whole (renamed in with their manifest): this is an earlier version's, or broken.
          await discard(path);
          continue;
        }
        const names = await readdir(path).catch(() => [] as string[]);
        for (const name of names.filter((n) => n.startsWith('.taking-') || n.startsWith('.tmp-'))) await removeIfStale(join(path, name));
        const usedAt = (await stat(join(path, 'manifest.json')).catch(() => ({ mtimeMs: 0 }))).mtimeMs;
        entries.push({ path, bytes: manifest.bytes, usedAt, readyCopies: readyCopyNames(names).map((n) => join(path, n)) });
      }
    }
    return entries;
  }

  /** Never shared across repositories: one folder per remote (a readable name and a hash). */
  private repoDir(repo: string): string {
    return join(this.opts.root, repoFolderName(repo));
  }

  private async readManifest(entry: string): Promise<Manifest | undefined> {
    try {
      return ManifestSchema.parse(JSON.parse(await readFile(join(entry, 'manifest.json'), 'utf8')));
    } catch {
      return undefined;
    }
  }
}

/**
 * Removes a folder another process may be claiming: renamed away first (atomic, as a restore's
 * claim is), so nobody is left holding half of it; gone already is fine.
 */
async function discard(path: string): Promise<void> {
  const away = join(dirname(path), `.tmp-discard-${randomBytes(6).toString('hex')}`);
  try {
    await rename(path, away);
  } catch {
    return;
  }
  await rm(away, { recursive: true, force: true });
}

/** Only the outermost paths: git lists a new folder and, with --ignored, files inside it too. */
export function outermost(paths: readonly string[]): string[] {
  const sorted = [...new Set(paths.map((p) => p.replace(/\/+$/, '')))].filter(Boolean).sort();
  return sorted.filter((p) => !sorted.some((q) => q !== p && p.startsWith(`${q}/`)));
}

async function removeIfStale(path: string): Promise<void> {
  const st = await stat(path).catch(() => undefined);
  if (st && Date.now() - st.mtimeMs > STALE_LEFTOVER_MS) await rm(path, { recursive: true, force: true });
}

/** Every folder between `dir` and `p` is a real folder (not a symlink). */
function parentsAreFolders(dir: string, p: string): boolean {
  const parts = p.split('/').slice(0, -1);
  let at = dir;
  for (const part of parts) {
    at = join(at, part);
    try {
      if (!lstatSync(at).isDirectory()) return false;
    } catch {
      return true; // not there: cp creates it, as a folder
    }
  }
  return true;
}

/** Nothing is there, or a regular file (replaced, not written through: --remove-destination). */
function freeOrFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return true;
  }
}
