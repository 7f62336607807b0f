import { createHash, randomBytes } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { execa } from 'execa';
import type { Logger } from 'pino';
import { z } from 'zod';

const DEFAULT_SETUP_CACHE_MB = 4096;

/** What an entry says of itself; written last, so an entry without it is incomplete. */
const ManifestSchema = z.strictObject({
  version: z.literal(1),
  key: z.string().regex(/^[0-9a-f]{64}$/),
  paths: z.array(z.string().min(1)),
  bytes: z.number().int().nonnegative(),
});
type Manifest = z.infer<typeof ManifestSchema>;

export interface SetupCacheOptions {
  /** Folder of the entries: `<root>/<repository>/<key>/{tree,manifest.json}`. */
  root: string;
  /** Bound on all entries together; the least recently used go first. */
  maxBytes: number;
  logger?: Logger;
}

/**
 * What setup produced (dependencies, a package store, a rewritten lockfile), kept per repository
 * and per key (the setup commands and the blobs of the files they read), so the next run or the
 * next goal on the repository copies it back instead of installing again. Entries are data: copied
 * with `cp -a` (symlinks stay links, nothing is followed), never run or interpreted by the host.
 */
export class SetupCache {
  constructor(private readonly opts: SetupCacheOptions) {}

  /** `<workspaces>/setup-cache`, bounded by GOAL_LOOP_SETUP_CACHE_MB (0 turns it off). */
  static fromEnv(workspaceRoot: string, env: NodeJS.ProcessEnv = process.env, logger?: Logger): SetupCache | undefined {
    const raw = env.GOAL_LOOP_SETUP_CACHE_MB;
    const mb = raw === undefined || raw === '' ? DEFAULT_SETUP_CACHE_MB : Number(raw);
    if (!Number.isFinite(mb) || mb < 0) throw new Error(`GOAL_LOOP_SETUP_CACHE_MB must be a number of megabytes (got "${raw}")`);
    if (mb === 0) return undefined;
    return new SetupCache({ root: join(workspaceRoot, 'setup-cache'), maxBytes: Math.round(mb * 1024 * 1024), ...(logger ? { logger } : {}) });
  }

  /** The key of a setup: its commands, whether it had the network, and the blobs of its inputs. */
  static key(parts: { commands: readonly string[]; network: boolean; inputs: ReadonlyArray<readonly [path: string, blob: string]> }): string {
    return createHash('sha256').update(JSON.stringify({ v: 1, ...parts })).digest('hex');
  }

  /**
   * Copies the entry for `key` into `dir`: `missing` when there is none (or it cannot go there
   * safely), `failed` when the copy broke midway (the caller resets the tree). An entry that does
   * not read back whole (no manifest, a listed path missing, a failed copy) is removed.
   */
  async restore(repo: string, key: string, dir: string): Promise<'restored' | 'missing' | 'failed'> {
    const entry = join(this.repoDir(repo), key);
    const manifest = await this.readManifest(entry);
    if (!manifest) {
      await rm(entry, { recursive: true, force: true });
      return 'missing';
    }
    // Only into places that are plainly free: a parent that is a symlink (or a path already there
    // as a folder or link) could send the host's copy outside the workspace; then setup runs.
    if (!manifest.paths.every((p) => parentsAreFolders(dir, p) && freeOrFile(join(dir, p)))) return 'missing';
    try {
      for (const p of manifest.paths) lstatSync(join(entry, 'tree', p));
    } catch {
      this.opts.logger?.warn({ entry }, 'a setup cache entry is incomplete; it is removed and setup runs');
      await rm(entry, { recursive: true, force: true });
      return 'missing';
    }
    try {
      for (const p of manifest.paths) {
        await mkdir(dirname(join(dir, p)), { recursive: true });
        await execa('cp', ['-a', '--reflink=auto', '--remove-destination', '--', join(entry, 'tree', p), join(dir, p)]);
      }
      const now = new Date();
      await utimes(join(entry, 'manifest.json'), now, now); // recently used
      return 'restored';
    } catch (err) {
      this.opts.logger?.warn({ err, entry }, 'a setup cache entry does not read back; it is removed and setup runs');
      await rm(entry, { recursive: true, force: true });
      return 'failed';
    }
  }

  /** Keeps `paths` of `dir` (setup's output, relative) under `key`, then evicts down to the bound. */
  async save(repo: string, key: string, dir: string, paths: readonly string[]): Promise<void> {
    await mkdir(this.repoDir(repo), { recursive: true });
    // Read through no link a task or setup planted on the way (it could point at host files).
    const safe = paths
      .map((p) => p.replace(/\/$/, ''))
      .filter((p) => p && !p.startsWith('/') && !p.split('/').includes('..') && p !== '.git' && !p.startsWith('.git/') && parentsAreFolders(dir, p));
    if (safe.length === 0) return;
    const repoDir = this.repoDir(repo);
    const entry = join(repoDir, key);
    if (await this.readManifest(entry)) return;
    const tmp = join(repoDir, `.tmp-${randomBytes(6).toString('hex')}`);
    try {
      for (const p of safe) {
        await mkdir(join(tmp, 'tree', dirname(p)), { recursive: true });
        await execa('cp', ['-a', '--reflink=auto', '--', join(dir, p), join(tmp, 'tree', p)]);
      }
      const { stdout } = await execa('du', ['-sb', '--', join(tmp, 'tree')]).catch(() => ({ stdout: '0' }));
      const manifest: Manifest = { version: 1, key, paths: safe, bytes: Number.parseInt(stdout, 10) || 0 };
      await writeFile(join(tmp, 'manifest.json'), JSON.stringify(manifest));
      await rm(entry, { recursive: true, force: true });
      await rename(tmp, entry);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    await this.evict();
  }

  /** Removes the least recently used entries (of any repository) while all of them exceed the bound. */
  async evict(): Promise<void> {
    const entries: Array<{ path: string; bytes: number; usedAt: number }> = [];
    for (const repo of await readdir(this.opts.root).catch(() => [] as string[])) {
      for (const key of await readdir(join(this.opts.root, repo)).catch(() => [] as string[])) {
        const path = join(this.opts.root, repo, key);
        const manifest = key.startsWith('.tmp-') ? undefined : await this.readManifest(path);
        if (!manifest) continue;
        entries.push({ path, bytes: manifest.bytes, usedAt: (await stat(join(path, 'manifest.json'))).mtimeMs });
      }
    }
    let total = entries.reduce((n, e) => n + e.bytes, 0);
    for (const e of entries.sort((a, b) => a.usedAt - b.usedAt)) {
      if (total <= this.opts.maxBytes) break;
      await rm(e.path, { recursive: true, force: true });
      total -= e.bytes;
      this.opts.logger?.info({ entry: e.path, bytes: e.bytes }, 'setup cache entry evicted');
    }
  }

  /** Never shared across repositories: one folder per remote (a readable name and a hash). */
  private repoDir(repo: string): string {
    const name = basename(repo.replace(/\.git\/?$/, '').replace(/\/+$/, '')).replace(/[^A-Za-z0-9._-]/g, '_') || 'repo';
    return join(this.opts.root, `${name}-${createHash('sha256').update(repo).digest('hex').slice(0, 12)}`);
  }

  private async readManifest(entry: string): Promise<Manifest | undefined> {
    try {
      return ManifestSchema.parse(JSON.parse(await readFile(join(entry, 'manifest.json'), 'utf8')));
    } catch {
      return undefined;
    }
  }
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
