import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from './file-lock.js';

/** Bytes of the files under `dir` (apparent sizes; symlinks not followed). */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += await directoryBytes(path);
    else total += (await lstat(path).catch(() => undefined))?.size ?? 0;
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
