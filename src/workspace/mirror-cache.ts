import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { FileLock } from './file-lock.js';
import { Git, GitError } from './git.js';
import { directoryBytes, sweepLeftovers } from './mirror-disk.js';
import { MirrorPins } from './mirror-pins.js';
import { WarmPool } from './warm-pool.js';

export const DEFAULT_CACHE_MB = 2048;
export const DEFAULT_WARM_PER_REMOTE = 2;
/**
 * Released trees of fewer files are not parked. A goal's prepare on 2 cores (median of 6, a fresh
 * clone against a parked tree): 100 files 122 ms against 126, 400 files 154 against 265; from 800
 * to 3200 files the two were within the noise of the disk (0.5 to 1.4 s each).
 */
export const DEFAULT_WARM_MIN_FILES = 1000;
const META = 'goal-loop-mirror.json';
/** Incremental fetches add one pack each; past this many they are merged (geometric repack). */
const MAX_PACKS = 16;
const HEADS = '+refs/heads/*:refs/heads/*';

export interface MirrorCacheOptions {
  /** Folder holding the mirrors, e.g. `<GOAL_LOOP_WORKSPACES>/mirrors`. */
  dir: string;
  /** Size bound of all mirrors and parked trees; beyond it parked trees go first, then mirrors (LRU). */
  maxBytes?: number;
  /** Folder of the released working trees parked for reuse; default `<dir>/../warm`. */
  warmDir?: string;
  /** Parked trees kept per remote (default 2); 0: released workspaces are deleted. */
  warmPerRemote?: number;
  /** Released trees with fewer files than this are deleted, not parked (default DEFAULT_WARM_MIN_FILES). */
  warmMinFiles?: number;
  /**
   * A mirror fetched less than this long ago is used as it is (default 10 s); the workspace
   * then fetches what is newer itself. A burst of goals on one repository fetches it once.
   */
  fetchIntervalMs?: number;
  /** How long a preparation waits for another one's fetch of the same mirror (default 10 min). */
  lockTimeoutMs?: number;
  logger?: Logger;
}

export interface MirrorUse {
  path: string;
  /** Fetched from the remote during this call: a clone of it needs no fetch of its own. */
  current: boolean;
  /**
   * Moves a working tree parked for this remote to `dest` (which must not exist); false when
   * there is none. Only here, under the mirror's lock: no two preparations take one tree.
   */
  takeParked(dest: string): Promise<boolean>;
}

export interface MirrorInfo {
  path: string;
  remote: string;
  usedAt: number;
  fetchedAt: number;
  bytes: number;
}

type Meta = Omit<MirrorInfo, 'path'>;

/**
 * One bare mirror per repository (branches only), fetched incrementally, from which goal
 * workspaces are cloned locally instead of downloading the repository again.
 */
export class MirrorCache {
  readonly dir: string;
  readonly maxBytes: number;
  /** Working trees of released goals, per remote, for the next goal on that remote. */
  readonly warm: WarmPool;
  private readonly local = new Git();

  constructor(private readonly opts: MirrorCacheOptions) {
    this.dir = opts.dir;
    this.maxBytes = opts.maxBytes ?? DEFAULT_CACHE_MB * 1024 * 1024;
    this.warm = new WarmPool(opts.warmDir ?? join(dirname(opts.dir), 'warm'), opts.warmPerRemote ?? DEFAULT_WARM_PER_REMOTE, opts.warmMinFiles ?? DEFAULT_WARM_MIN_FILES);
  }

  /** `<workspaceRoot>/mirrors`, bounded by `GOAL_LOOP_CACHE_MB` (default 2048). */
  static fromEnv(workspaceRoot: string, env: NodeJS.ProcessEnv = process.env, logger?: Logger): MirrorCache {
    const raw = env.GOAL_LOOP_CACHE_MB;
    const mb = raw === undefined || raw === '' ? DEFAULT_CACHE_MB : Number(raw);
    if (!Number.isFinite(mb) || mb < 0) throw new Error(`GOAL_LOOP_CACHE_MB must be a number of megabytes (got "${raw}")`);
    return new MirrorCache({ dir: join(workspaceRoot, 'mirrors'), maxBytes: Math.round(mb * 1024 * 1024), ...(logger ? { logger } : {}) });
  }

  /** Readable name plus a hash of the exact remote, so two remotes never share a mirror. */
  pathFor(remote: string): string {
    return join(this.dir, `${this.keyFor(remote)}.git`);
  }

  /** The mirror's name without `.git`: also names the remote's pool of parked trees. */
  keyFor(remote: string): string {
    const name = basename(remote.replace(/\.git\/?$/, '').replace(/\/+$/, '')).replace(/[^A-Za-z0-9._-]/g, '_') || 'repo';
    return `${name}-${createHash('sha256').update(remote).digest('hex').slice(0, 12)}`;
  }

  /**
   * Brings the mirror of `remote` up to date (creating it on first use) and runs `use` on it,
   * all under the mirror's lock: no fetch, repack or eviction changes it while `use` reads it.
   * `git` carries the remote's auth (its secrets stay in the environment of the fetch).
   */
  async withMirror<T>(remote: string, git: Git, use: (mirror: MirrorUse) => Promise<T>): Promise<T> {
    const path = this.pathFor(remote);
    const lock = this.lockFor(path);
    await lock.acquire();
    try {
      const meta = await readMeta(path);
      let current = false;
      if (!meta || meta.remote !== remote) {
        await this.create(remote, path, git);
        current = true;
      } else if (Date.now() - meta.fetchedAt >= (this.opts.fetchIntervalMs ?? 10_000)) {
        current = await this.update(remote, path, git);
      }
      const now = Date.now();
      await writeMeta(path, { remote, usedAt: now, fetchedAt: current || !meta ? now : meta.fetchedAt, bytes: await directoryBytes(path) });
      const takeParked = (dest: string) => this.warm.take(this.keyFor(remote), remote, dest);
      const result = await use({ path, current, takeParked });
      // Still under our lock, so this mirror (the one just used) is never the one evicted.
      await this.evict();
      return result;
    } finally {
      await lock.release();
    }
  }

  /** Marks the mirror of `remote` as in use by the workspace `holder` until `unpin`. */
  async pin(remote: string, holder: string): Promise<void> {
    await this.pinsFor(this.pathFor(remote)).add(holder);
  }

  async unpin(remote: string, holder: string): Promise<void> {
    await this.pinsFor(this.pathFor(remote)).remove(holder);
  }

  /**
   * Parks the working tree of a released workspace of `remote` for the next goal on it (its
   * `.git` is deleted). False: parking is off or impossible (`tree` is left in place), or the tree
   * has fewer files than the pool's minimum (it is deleted).
   */
  async park(remote: string, tree: string): Promise<boolean> {
    return this.warm.park(this.keyFor(remote), remote, tree);
  }

  async list(): Promise<MirrorInfo[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const out: MirrorInfo[] = [];
    for (const name of names.filter((n) => n.endsWith('.git'))) {
      const path = join(this.dir, name);
      const meta = await readMeta(path);
      out.push({ path, remote: meta?.remote ?? '', usedAt: meta?.usedAt ?? 0, fetchedAt: meta?.fetchedAt ?? 0, bytes: meta?.bytes ?? (await directoryBytes(path)) });
    }
    return out;
  }

  /**
   * Removes parked trees (oldest first), then least recently used mirrors, until the cache fits
   * its bound: a parked tree only saves a checkout, a mirror saves a download. A mirror that is
   * locked (being fetched or cloned from) or pinned by a live workspace is skipped.
   */
  async evict(): Promise<string[]> {
    await sweepLeftovers(this.dir);
    await this.warm.sweep();
    const parked = await this.warm.list();
    const mirrors = (await this.list()).sort((a, b) => a.usedAt - b.usedAt);
    let total = [...parked, ...mirrors].reduce((sum, m) => sum + m.bytes, 0);
    const removed: string[] = [];
    for (const p of parked) {
      if (total <= this.maxBytes) break;
      total -= p.bytes; // taken meanwhile counts as gone too: it is a live workspace now
      if (!(await this.warm.discard(p.path))) continue;
      removed.push(p.path);
      this.opts.logger?.info({ parked: p.path, bytes: p.bytes, cache_bytes: total, max_bytes: this.maxBytes }, 'parked tree evicted');
    }
    for (const m of mirrors) {
      if (total <= this.maxBytes) break;
      const pins = this.pinsFor(m.path);
      if (await pins.inUse()) continue;
      const lock = this.lockFor(m.path);
      if (!(await lock.tryAcquire())) continue;
      try {
        // Pinned, or already evicted by another process, between the two looks.
        if ((await pins.inUse()) || !(await readMeta(m.path))) continue;
        await discard(this.dir, m.path);
        await pins.clear();
      } finally {
        await lock.release();
      }
      total -= m.bytes;
      removed.push(m.path);
      this.opts.logger?.info({ mirror: m.path, remote: m.remote, bytes: m.bytes, cache_bytes: total, max_bytes: this.maxBytes }, 'mirror evicted');
    }
    if (total > this.maxBytes) this.opts.logger?.warn({ cache_bytes: total, max_bytes: this.maxBytes }, 'mirror cache over its bound: the rest is in use');
    return removed;
  }

  private async create(remote: string, path: string, git: Git): Promise<void> {
    const started = Date.now();
    await mkdir(this.dir, { recursive: true });
    await discard(this.dir, path); // a mirror of another remote under a colliding name, or one without metadata
    // Built aside and renamed into place, so a crash never leaves a half mirror behind.
    const tmp = join(this.dir, `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      // --no-local: a local remote goes through the pack transport, no inode is shared with it.
      await git.run(this.dir, ['clone', '--quiet', '--bare', '--no-local', '--no-tags', remote, tmp]);
      await this.local.runGitDir(tmp, ['config', 'fetch.unpackLimit', '1']); // one pack per fetch, no loose objects
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
    this.opts.logger?.info({ mirror: path, remote, ms: Date.now() - started }, 'mirror created');
  }

  /** Fetches what is new; a mirror that cannot be fetched is rebuilt once. True: fetched. */
  private async update(remote: string, path: string, git: Git): Promise<boolean> {
    const started = Date.now();
    try {
      await git.runGitDir(path, ['fetch', '--quiet', '--prune', '--no-tags', remote, HEADS]);
    } catch (err) {
      if (!(err instanceof GitError)) throw err;
      this.opts.logger?.warn({ mirror: path, remote, err: err.message }, 'mirror fetch failed; rebuilding it');
      await this.create(remote, path, git);
      return true;
    }
    await this.repackIfNeeded(path);
    this.opts.logger?.debug({ mirror: path, remote, ms: Date.now() - started }, 'mirror fetched');
    return true;
  }

  private async repackIfNeeded(path: string): Promise<void> {
    const packs = (await readdir(join(path, 'objects', 'pack')).catch(() => [] as string[])).filter((n) => n.endsWith('.pack'));
    if (packs.length > MAX_PACKS) await this.local.runGitDir(path, ['repack', '-d', '-q', '--geometric=2']);
  }

  private lockFor(path: string): FileLock {
    return new FileLock(`${path}.lock`, { ...(this.opts.lockTimeoutMs !== undefined ? { timeoutMs: this.opts.lockTimeoutMs } : {}) });
  }

  private pinsFor(path: string): MirrorPins {
    return new MirrorPins(`${path}.pins`);
  }
}

/** Moved out of the way first: a partly deleted mirror must never look like a mirror. */
async function discard(cacheDir: string, path: string): Promise<void> {
  const trash = join(cacheDir, `.trash-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await rename(path, trash);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  await rm(trash, { recursive: true, force: true });
}

async function readMeta(path: string): Promise<Meta | undefined> {
  try {
    const m = JSON.parse(await readFile(join(path, META), 'utf8')) as Partial<Meta>;
    if (typeof m.remote === 'string' && typeof m.usedAt === 'number' && typeof m.fetchedAt === 'number' && typeof m.bytes === 'number') return m as Meta;
  } catch {
    // missing or unreadable: treated as no mirror
  }
  return undefined;
}

async function writeMeta(path: string, meta: Meta): Promise<void> {
  await writeFile(join(path, META), `${JSON.stringify(meta)}\n`, { mode: 0o600 });
}
