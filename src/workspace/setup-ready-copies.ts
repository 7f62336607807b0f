import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { FOLDER_LISTING_FIND } from './folder-listing.js';
import { stripSetIds } from './setup-disk.js';

/**
 * Ready copies of a setup cache entry: a whole copy of its tree, made by the host in the
 * background after a save or a restore, that the next restore *moves* into a workspace (a rename
 * per path, whatever the size) instead of copying. The entry itself is never handed out, so no
 * task ever holds a file of it; a copy is handed out once.
 *
 *   <entry>/ready-<id>/        complete, waiting (at most one is kept): `tree/` holds the
 *                              paths, `folders` their folder listing (see folder-listing.ts)
 *   <entry>/../.tmp-ready-<id>/  being made (renamed into the entry when whole)
 *   <entry>/../.tmp-ready-<key>-<id>/  being made by a detached process (same rule)
 *   <entry>/.taking-<id>/      claimed by a restore, being moved out
 */

/** Copies being made in this process, by entry: a restore waits for one rather than copy again. */
const making = new Map<string, Promise<void>>();
/** Copies waiting out their delay, each a way to start it at once. */
const waiting = new Set<() => void>();

/** A copy's folders are listed this long after it is whole: past FolderMemo's racy window (100 ms) on a filesystem with fine ctimes. */
const LISTING_AFTER_MS = 120;

/** Leftovers of a killed process older than this are removed by the next sweep. */
export const STALE_LEFTOVER_MS = 60 * 60 * 1000;

export function readyCopyNames(names: readonly string[]): string[] {
  return names.filter((n) => n.startsWith('ready-'));
}

/**
 * Makes one ready copy of the entry's tree, after `delayMs`, unless one is waiting or being made,
 * or `hasRoom` says the cache's bound has no room for it; never throws. The delay keeps the copy
 * off the start of the goal that just saved or restored the entry: tens of megabytes written
 * beside its first git commands and sandboxed processes slow them (whatever the CPU priority).
 */
export function makeReadyCopy(entry: string, paths: readonly string[], hasRoom: () => Promise<boolean>, onError: (err: unknown) => void, delayMs = 0): Promise<void> {
  const running = making.get(entry);
  if (running !== undefined) return running;
  const job = (async () => {
    await delay(delayMs);
    if (readyCopyNames(await readdir(entry)).length > 0 || !(await hasRoom())) return;
    // Made beside the entry, not in it: an entry removed meanwhile is not brought back by the copy.
    const tmp = join(dirname(entry), `.tmp-ready-${randomBytes(6).toString('hex')}`);
    try {
      for (const p of paths) {
        await mkdir(dirname(join(tmp, 'tree', p)), { recursive: true });
        // At the lowest CPU priority: the goal that saved the entry is still running.
        await execa('nice', ['-n', '19', 'cp', '-a', '--reflink=auto', '--', join(entry, 'tree', p), join(tmp, 'tree', p)]);
      }
      // The entry has no set-id bits; a copy that goes to a workspace has none whatever the entry holds.
      await stripSetIds([join(tmp, 'tree')]);
      // Listed last: nothing changes the copy after this, until a restore moves it in. After the
      // racy window: a folder changed less than that before the listing would be read anyway.
      await sleep(LISTING_AFTER_MS);
      await listFolders(tmp);
      await rename(tmp, join(entry, `ready-${randomBytes(6).toString('hex')}`));
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  })()
    .catch(onError)
    .finally(() => making.delete(entry));
  making.set(entry, job);
  return job;
}

/** Writes the copy's folder listing (the walk's start, then `find`'s records) beside its tree; a copy without one is still a copy. */
async function listFolders(copy: string): Promise<void> {
  const file = join(copy, 'folders');
  try {
    await writeFile(file, `${BigInt(Date.now()) * 1_000_000n}\0`, { mode: 0o600 });
    // Straight into the file: a tree of a million folders is no buffer's business.
    await execa('nice', ['-n', '19', 'find', '-P', join(copy, 'tree'), ...FOLDER_LISTING_FIND], { stdout: { file, append: true }, stderr: 'ignore' });
  } catch {
    await rm(file, { force: true });
  }
}

/**
 * The same copy, made by a detached process that outlives ours (for `goal-loop run`, which must
 * exit with its last line, not after a copy of the dependencies). Safe to abandon at any point:
 * the copy is published only by the final rename (`mv -T`, same filesystem: a rename(2)), so a
 * half-made one is never named `ready-*` and never handed out; a failed one removes itself, and
 * one killed with the machine is a `.tmp-` leftover the cache's next sweep removes once stale.
 * Made unless a ready copy is waiting or another process is making one; never throws.
 */
export async function detachReadyCopy(entry: string, paths: readonly string[], hasRoom: () => Promise<boolean>, onError: (err: unknown) => void, delayMs = 0): Promise<void> {
  try {
    const key = basename(entry);
    if (readyCopyNames(await readdir(entry)).length > 0 || (await beingMade(dirname(entry), key)) || !(await hasRoom())) return;
    const tmp = join(dirname(entry), `.tmp-ready-${key}-${randomBytes(6).toString('hex')}`);
    const dest = join(entry, `ready-${randomBytes(6).toString('hex')}`);
    // Paths are arguments, never part of the script. `a && b || c`: any failure removes the copy.
    const script = [
      // The same delay as in this process (see makeReadyCopy), slept by the copy's own process.
      'tmp=$1; dest=$2; tree=$3; sleep "$4"; shift 4',
      'for p in "$@"; do mkdir -p -- "$tmp/tree/$(dirname -- "$p")" && cp -a --reflink=auto -- "$tree/$p" "$tmp/tree/$p" || { rm -rf -- "$tmp"; exit 1; }; done',
      'find -P "$tmp/tree" \\( -type f -o -type d \\) -perm /6000 -exec chmod u-s,g-s -- {} + || { rm -rf -- "$tmp"; exit 1; }',
      // The folder listing (see makeReadyCopy); a copy without one is still a copy.
      `sleep ${LISTING_AFTER_MS / 1000} && { printf '%s\\0' "$(date +%s%N)" && find -P "$tmp/tree" ${FOLDER_LISTING_FIND.map(shellQuote).join(' ')}; } > "$tmp/folders" || rm -f -- "$tmp/folders"`,
      'mv -T -- "$tmp" "$dest" || rm -rf -- "$tmp"',
    ].join('\n');
    await mkdir(tmp); // at once: another process's look sees this copy under way
    const child = spawn('nice', ['-n', '19', 'sh', '-c', script, 'sh', tmp, dest, join(entry, 'tree'), (Math.max(delayMs, 0) / 1000).toFixed(3), ...paths], { detached: true, stdio: 'ignore' });
    child.on('error', (err) => {
      onError(err);
      void rm(tmp, { recursive: true, force: true });
    });
    child.unref();
  } catch (err) {
    onError(err);
  }
}

/** A detached copy of the entry `key` under way (a `.tmp-ready-<key>-` folder not yet stale). */
async function beingMade(repoDir: string, key: string): Promise<boolean> {
  for (const name of await readdir(repoDir).catch(() => [] as string[])) {
    if (!name.startsWith(`.tmp-ready-${key}-`)) continue;
    const st = await stat(join(repoDir, name)).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs < STALE_LEFTOVER_MS) return true;
  }
  return false;
}

/** Every ready copy this process is making, done (those waiting out their delay start now). */
export async function readyCopiesSettled(): Promise<void> {
  while (making.size > 0) {
    for (const start of waiting) start(); // each leaves the set as it starts
    await Promise.all(making.values());
  }
}

/** Resolves after `ms`, or as soon as `readyCopiesSettled` asks; keeps no process alive for a copy. */
function delay(ms: number): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const start = () => {
      clearTimeout(timer);
      waiting.delete(start);
      resolve();
    };
    const timer = setTimeout(start, ms);
    timer.unref();
    waiting.add(start);
  });
}

/**
 * Claims a ready copy of the entry: its folder, renamed so no other restore (nor an eviction)
 * can take it, or undefined. A copy that lacks a listed path
 * is removed.
 */
export async function takeReadyCopy(entry: string, paths: readonly string[]): Promise<string | undefined> {
  // No waiting for a copy being made (at the lowest priority, it may take longer than a copy now).
  for (const name of readyCopyNames(await readdir(entry).catch(() => []))) {
    const claimed = join(entry, `.taking-${randomBytes(6).toString('hex')}`);
    try {
      await rename(join(entry, name), claimed); // atomic: of two restores, one wins
    } catch {
      continue;
    }
    const now = new Date();
    await utimes(claimed, now, now).catch(() => undefined); // a rename keeps the mtime: not a stale leftover
    try {
      for (const p of paths) lstatSync(join(claimed, 'tree', p));
      return claimed;
    } catch {
      await rm(claimed, { recursive: true, force: true });
    }
  }
  return undefined;
}

/**
 * Moves each path of a claimed copy into `dir`, whose parents the caller checked are plain
 * folders and whose destinations are free or regular files. `false` when the copy is on another
 * filesystem (nothing moved); throws when a move breaks midway (the caller resets the tree).
 */
export async function moveInto(claimed: string, dir: string, paths: readonly string[]): Promise<boolean> {
  for (const [i, p] of paths.entries()) {
    const dest = join(dir, p);
    await mkdir(dirname(dest), { recursive: true });
    await rm(dest, { force: true }); // a regular file setup rewrites (e.g. a lockfile); never a folder
    try {
      await rename(join(claimed, 'tree', p), dest);
    } catch (err) {
      if (i === 0 && (err as NodeJS.ErrnoException).code === 'EXDEV') return false;
      throw err;
    }
  }
  return true;
}

/** One word for `sh`, whatever it holds. */
function shellQuote(word: string): string {
  return `'${word.replace(/'/g, "'\\''")}'`;
}
