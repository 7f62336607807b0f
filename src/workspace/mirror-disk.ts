import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from './file-lock.js';

/** Bytes of the files under `dir` (apparent sizes; symlinks not followed). */
export async function directoryBytes(dir: string): Promise<number> {
  return (await directoryUsage(dir)).bytes;
}

/** Bytes of the files below `dir` (links as links) and how many entries that are not folders it holds. */
export async function directoryUsage(dir: string | Buffer): Promise<{ bytes: number; files: number }> {
  const total = { bytes: 0, files: 0 };
  // Names as bytes: a folder whose name is not UTF-8 is counted like any other.
  const entries = await readdir(dir, { withFileTypes: true, encoding: 'buffer' }).catch(() => []);
  for (const e of entries) {
    const path = Buffer.concat([Buffer.from(dir), SLASH, e.name]);
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

const SLASH = Buffer.from('/');

/** Removes half-built (`.tmp-<pid>-…`) and half-deleted (`.trash-<pid>-…`) mirrors of dead processes. */
export async function sweepLeftovers(cacheDir: string): Promise<void> {
  const names = await readdir(cacheDir).catch(() => [] as string[]);
  for (const name of names) {
    const m = /^\.(?:tmp|trash)-(\d+)-/.exec(name);
    if (m && !isAlive(Number(m[1]))) await rm(join(cacheDir, name), { recursive: true, force: true });
  }
}
