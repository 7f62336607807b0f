import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { directoryUsage, sweepLeftovers } from './mirror-disk.js';

export interface ParkedTree {
  path: string;
  /** The pool (one per remote) it is parked in. */
  key: string;
  parkedAt: number;
  bytes: number;
}

/** `<parkedAt, 15 digits>-<bytes>-<random>`: everything eviction needs is in the name, set atomically. */
const ENTRY = /^(\d{15})-(\d+)-[0-9a-f]{8}$/;
/** The exact remote a pool belongs to: two remotes never share trees, even on a key collision. */
const REMOTE_FILE = 'remote';

/**
 * Working trees of released goals, parked per remote so the next goal on that remote checks out
 * only the files that differ instead of writing them all. A parked tree has no `.git` and is
 * untrusted (a goal's code wrote it) until its taker scrubs it. Entries move only by rename, so
 * a tree is taken, trimmed or evicted by exactly one party.
 */
export class WarmPool {
  constructor(
    readonly dir: string,
    /** Trees kept per remote; 0 turns parking off. */
    readonly perRemote: number,
    /**
     * A tree of fewer files is not parked: a fresh checkout writes it sooner than a parked one is
     * scrubbed, indexed and cleaned (see DEFAULT_WARM_MIN_FILES).
     */
    readonly minFiles = 0,
  ) {}

  /** Moves the released workspace `tree` into the pool of `key`. False: not parked (left in place, or deleted when too small to be worth it). */
  async park(key: string, remote: string, tree: string): Promise<boolean> {
    if (this.perRemote <= 0) return false;
    const pool = join(this.dir, key);
    await mkdir(pool, { recursive: true });
    if (!(await claimPool(pool, remote))) return false;
    const tmp = join(pool, `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      await rename(tree, tmp);
    } catch (err) {
      if (['ENOENT', 'EXDEV'].includes((err as NodeJS.ErrnoException).code ?? '')) return false;
      throw err;
    }
    try {
      // The goal's git directory is never reused: its taker gets a fresh one from the mirror.
      await rm(join(tmp, '.git'), { recursive: true, force: true });
      const { bytes, files } = await directoryUsage(tmp);
      if (files < this.minFiles) {
        await rm(tmp, { recursive: true, force: true });
        return false;
      }
      await rename(tmp, join(pool, `${String(Date.now()).padStart(15, '0')}-${bytes}-${randomBytes(4).toString('hex')}`));
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
    await this.trim(pool);
    return true;
  }

  /**
   * Renames the newest tree parked for `remote` to `dest` (which must not exist). The rename is
   * the claim: of two takers of one tree, the second gets ENOENT and tries the next one.
   */
  async take(key: string, remote: string, dest: string): Promise<boolean> {
    if (this.perRemote <= 0) return false;
    const pool = join(this.dir, key);
    if ((await readFile(join(pool, REMOTE_FILE), 'utf8').catch(() => '')) !== remote) return false;
    for (const tree of (await entries(pool, key)).reverse()) {
      try {
        await rename(tree.path, dest);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return false; // e.g. EXDEV: clone instead
      }
    }
    return false;
  }

  /** Every parked tree, oldest first. */
  async list(): Promise<ParkedTree[]> {
    const keys = await readdir(this.dir).catch(() => [] as string[]);
    const all = await Promise.all(keys.filter((k) => !k.startsWith('.')).map((k) => entries(join(this.dir, k), k)));
    return all.flat().sort((a, b) => a.parkedAt - b.parkedAt);
  }

  /** Deletes a parked tree; false when someone took or deleted it first. */
  async discard(path: string): Promise<boolean> {
    const trash = join(this.dir, `.trash-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      await rename(path, trash);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
    await rm(trash, { recursive: true, force: true });
    return true;
  }

  /** Removes half-parked and half-deleted trees of dead processes. */
  async sweep(): Promise<void> {
    await sweepLeftovers(this.dir);
    for (const key of await readdir(this.dir).catch(() => [] as string[])) {
      if (!key.startsWith('.')) await sweepLeftovers(join(this.dir, key));
    }
  }

  private async trim(pool: string): Promise<void> {
    const trees = await entries(pool, '');
    for (const tree of trees.slice(0, Math.max(trees.length - this.perRemote, 0))) await this.discard(tree.path);
  }
}

async function entries(pool: string, key: string): Promise<ParkedTree[]> {
  const names = await readdir(pool).catch(() => [] as string[]);
  const out: ParkedTree[] = [];
  for (const name of names) {
    const m = ENTRY.exec(name);
    if (m) out.push({ path: join(pool, name), key, parkedAt: Number(m[1]), bytes: Number(m[2]) });
  }
  return out.sort((a, b) => a.parkedAt - b.parkedAt);
}

/** Records the pool's remote on first use; false if the pool belongs to another remote. */
async function claimPool(pool: string, remote: string): Promise<boolean> {
  try {
    await writeFile(join(pool, REMOTE_FILE), remote, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return (await readFile(join(pool, REMOTE_FILE), 'utf8').catch(() => '')) === remote;
}
