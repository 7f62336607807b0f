import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from './file-lock.js';

/** Bytes of the files under `dir` (apparent sizes; symlinks not followed). */
export async function directoryBytes(dir: string): Promise<number> {
  return (await directoryUsage(dir)).bytes;
}

/** Bytes of the files below `dir` (links as links) and how many entries that are not folders it holds. */
export async function directoryUsage(dir: string): Promise<{ bytes: number; files: number }> {
  const total = { bytes: 0, files: 0 };
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      const sub = await directoryUsage(path);
      total.bytes += sub.bytes;
      total.files += sub.files;
    } else {
      total.bytes += (await lstat(path).catch(() => undefined))?.size ?? 0;
      total.files++;
    }
  }
  return total;
}

/** Removes half-built (`.tmp-<pid>-…`) and half-deleted (`.trash-<pid>-…`) mirrors of dead processes. */
export async function sweepLeftovers(cacheDir: string): Promise<void> {
  const names = await readdir(cacheDir).catch(() => [] as string[]);
  for (const name of names) {
    const m = /^\.(?:tmp|trash)-(\d+)-/.exec(name);
    if (m && !isAlive(Number(m[1]))) await rm(join(cacheDir, name), { recursive: true, force: true });
  }
}
