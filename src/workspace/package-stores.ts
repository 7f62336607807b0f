import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Logger } from 'pino';
import { FileLock } from './file-lock.js';
import { repoFolderName } from './repo-folder.js';
import { diskUsage, stripSetIds } from './setup-disk.js';

const DEFAULT_STORE_MB = 4096;
/** The stores' folders: only searchable by others (the jail's uid binds its store through them). */
const DIR_MODE = 0o711;
/** A leftover with no lock (its maker died before taking it) is removed once this old. */
const STALE_THROWAWAY_MS = 24 * 3_600_000;

/**
 * A repository's store folder: repoFolderName (name and 12 hex) and a hash of repository and base,
 * 128 bits: a base is a name a caller picks, so a short hash could be searched for one that
 * shares another base's (or repository's) store.
 */
const STORE_NAME = /^[A-Za-z0-9._-]+-[0-9a-f]{12}-[0-9a-f]{32}$/;

export interface PackageStoresOptions {
  /** `<root>/<repository>/{store/, lock, bytes}`, and throwaway stores as `<root>/.tmp-<id>/{store/, lock}`. */
  root: string;
  /** Bound on all repositories' stores together, in blocks in use; the least recently used go first. 0: throwaway stores only. */
  maxBytes: number;
  logger?: Logger;
}

/** The store one setup gets, bound read-write into its jail (and nowhere else). */
export interface PackageStoreClaim {
  /** The host folder: real, made by goal-loop, no link on the way. */
  readonly dir: string;
  /** True when it is the repository's store, kept for its next setup; false: a throwaway. */
  readonly kept: boolean;
  /** Ends the setup's use: a throwaway goes, a kept store is measured and the bound applied. */
  release(): Promise<void>;
}

/**
 * Package managers' stores and caches (npm's cache, pnpm's store, yarn's cache), one per
 * repository, outside every workspace: a second goal's install links or copies from it instead of
 * downloading, and the setup cache holds `node_modules`, not the store a second time.
 *
 * Never shared between repositories: what one repository's setup wrote into a store (a store
 * file is trusted by the next install that finds it) must not be what another's installs. Within
 * a repository, only setup on the base commit writes the kept store (the setup cache's trust rule,
 * see SetupTrust); setup on a goal branch, whose tasks could have changed what it runs, gets a
 * throwaway store, as does a setup while another of the same repository holds the kept one.
 */
export class PackageStores {
  constructor(private readonly opts: PackageStoresOptions) {}

  /** `<workspaces>/package-stores`, bounded by GOAL_LOOP_STORE_MB (0: a throwaway store per setup). */
  static fromEnv(workspaceRoot: string, env: NodeJS.ProcessEnv = process.env, logger?: Logger): PackageStores {
    const raw = env.GOAL_LOOP_STORE_MB;
    const mb = raw === undefined || raw === '' ? DEFAULT_STORE_MB : Number(raw);
    if (!Number.isFinite(mb) || mb < 0) throw new Error(`GOAL_LOOP_STORE_MB must be a number of megabytes (got "${raw}")`);
    return new PackageStores({ root: join(workspaceRoot, 'package-stores'), maxBytes: Math.round(mb * 1024 * 1024), ...(logger ? { logger } : {}) });
  }

  /**
   * The repository's kept store for setups on `base` when `trusted` and free, else a throwaway
   * one. Kept per base branch, as the setup cache is: what setup made on `--base feature-x`
   * never reaches a goal on the default branch ('' and its name key alike: see SetupTrust).
   */
  async claim(repo: string, base: string, trusted: boolean): Promise<PackageStoreClaim> {
    // Searchable, not listable, by the jail's uid (a direct jail binds the store as that uid);
    // by its real path, which the jail requires of a store (GOAL_LOOP_WORKSPACES may be a link).
    await mkdir(this.opts.root, { recursive: true, mode: DIR_MODE });
    const root = await realpath(this.opts.root);
    if (trusted && this.opts.maxBytes > 0) {
      const key = createHash('sha256')
        .update(JSON.stringify([repo, base]))
        .digest('hex')
        .slice(0, 32);
      const home = join(root, `${repoFolderName(repo)}-${key}`);
      await mkdir(home, { recursive: true, mode: DIR_MODE });
      const lock = new FileLock(join(home, 'lock'));
      if (await lock.tryAcquire()) {
        try {
          const dir = join(home, 'store');
          await mkdir(dir, { recursive: true, mode: 0o755 });
          return { dir, kept: true, release: () => this.releaseKept(home, lock) };
        } catch (err) {
          await lock.release();
          throw err;
        }
      }
      this.opts.logger?.info({ repo }, 'another setup of this repository holds its package store: this one gets a throwaway store');
    }
    // The store's folder is the jail's (it can date it back); whether it is in use is told by
    // a lock beside it, which the jail never sees: never removed while its setup may still run.
    const home = join(root, `.tmp-${randomBytes(6).toString('hex')}`);
    await mkdir(home, { mode: DIR_MODE });
    const lock = new FileLock(join(home, 'lock'));
    await lock.tryAcquire();
    const dir = join(home, 'store');
    await mkdir(dir, { mode: 0o755 });
    return {
      dir,
      kept: false,
      release: async () => {
        await removeTree(home);
        await lock.release();
      },
    };
  }

  /** How many repositories have a store. */
  async count(): Promise<number> {
    return (await this.scan()).length;
  }

  /** Every store together, in blocks in use (as last measured). */
  async totalBytes(): Promise<number> {
    return (await this.scan()).reduce((n, s) => n + s.bytes, 0);
  }

  /**
   * Down to the bound (`all`: every one): the least recently used stores go first, never one a
   * setup holds. Also removes throwaway stores a killed process left.
   */
  async evict(opts: { all?: boolean } = {}): Promise<void> {
    const stores = (await this.scan()).sort((a, b) => a.usedAt - b.usedAt);
    let total = stores.reduce((n, s) => n + s.bytes, 0);
    for (const s of stores) {
      if (!opts.all && total <= this.opts.maxBytes) return;
      if (await this.discard(s.home)) {
        total -= s.bytes;
        this.opts.logger?.info({ store: s.home, bytes: s.bytes }, 'package store evicted');
      }
    }
  }

  private async releaseKept(home: string, lock: FileLock): Promise<void> {
    try {
      const dir = join(home, 'store');
      // Data for the next install: nothing in it runs as anyone else's user.
      await stripSetIds([dir]).catch(async () => {
        await openUp(dir);
        await stripSetIds([dir]);
      });
      const { allocated } = await diskUsage([dir]);
      await writeFile(join(home, 'bytes'), String(allocated)); // its mtime: when it was last used
      if (allocated > this.opts.maxBytes) {
        this.opts.logger?.info({ store: home, bytes: allocated, maxBytes: this.opts.maxBytes }, 'a package store is larger than its bound on its own: it is removed');
        await removeTree(dir);
        await writeFile(join(home, 'bytes'), '0');
      }
    } finally {
      await lock.release();
    }
    await this.evict().catch((err: unknown) => this.opts.logger?.warn({ err }, 'package store eviction failed'));
  }

  private async scan(): Promise<Array<{ home: string; bytes: number; usedAt: number }>> {
    const out: Array<{ home: string; bytes: number; usedAt: number }> = [];
    for (const name of await readdir(this.opts.root).catch(() => [] as string[])) {
      const home = join(this.opts.root, name);
      if (name.startsWith('.tmp-')) {
        await this.removeIfAbandoned(home);
        continue;
      }
      // Only what claim() names: nothing else under the root is a store to measure or evict.
      if (!STORE_NAME.test(name)) continue;
      const bytesFile = join(home, 'bytes');
      const [text, st] = await Promise.all([readFile(bytesFile, 'utf8').catch(() => ''), stat(bytesFile).catch(() => undefined)]);
      const bytes = Number.parseInt(text, 10);
      out.push({ home, bytes: Number.isFinite(bytes) ? bytes : 0, usedAt: st?.mtimeMs ?? 0 });
    }
    return out;
  }

  /**
   * A throwaway store (or a discarded one) whose maker is gone: its lock is free, or it has none
   * (its maker died before taking it) and is a day old. Never judged by the store's own folder,
   * which the jail can date back: removing a tree a jailed process still changes would follow
   * any link it swaps in for a folder.
   */
  private async removeIfAbandoned(home: string): Promise<void> {
    // One another host wrote (a shared root) is judged by age, as before: a day, not the default hour.
    const lock = new FileLock(join(home, 'lock'), { foreignStaleMs: STALE_THROWAWAY_MS });
    const locked = existsSync(lock.path);
    if (locked && !(await lock.tryAcquire())) return;
    try {
      if (!locked) {
        const st = await stat(home).catch(() => undefined);
        if (!st || Date.now() - st.mtimeMs <= STALE_THROWAWAY_MS) return;
      }
      await removeTree(home);
    } catch (err) {
      this.opts.logger?.warn({ err, store: home }, 'cannot remove a leftover package store');
    } finally {
      await lock.release();
    }
  }

  /** Removes a repository's store unless a setup holds it; true when it went. */
  private async discard(home: string): Promise<boolean> {
    const lock = new FileLock(join(home, 'lock'));
    if (!(await lock.tryAcquire())) return false;
    const away = join(this.opts.root, `.tmp-discard-${randomBytes(6).toString('hex')}`);
    try {
      await rename(home, away);
    } catch {
      await lock.release();
      return false;
    }
    await lock.release(); // its file went with the folder
    await removeTree(away);
    return true;
  }
}

/**
 * Removes what setup wrote. When the bot is not root the jail runs as its uid, so setup may leave
 * a folder it made unreadable (chmod 000), which `rm` cannot enter: opened up first, then.
 */
async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch {
    await openUp(path);
    await rm(path, { recursive: true, force: true });
  }
}

/**
 * Gives the owner rwx on every folder under `path` (links never followed; `;`, not `+`: each
 * folder is opened before find reads it). Only where no jailed process runs.
 */
async function openUp(path: string): Promise<void> {
  await execa('find', ['-P', path, '-type', 'd', '!', '-perm', '-u=rwx', '-exec', 'chmod', 'u+rwx', '--', '{}', ';'], { env: { LC_ALL: 'C' }, reject: false });
}
