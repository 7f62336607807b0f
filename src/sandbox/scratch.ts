import { closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let dir: string | undefined;
let seq = 0;

/**
 * This process's scratch directory for the sandbox's short-lived files (generated /etc files,
 * output FIFOs, throwaway homes): `$TMPDIR/goal-loop-<uid>/run-<pid>-*`. Removed when the
 * process exits; a process that was killed leaves it behind, and the next bot process of the
 * same user removes it (its name carries the dead pid). Per user, so that what another user
 * leaves in a shared /tmp (which we cannot remove) is never in the way.
 * World-readable (not writable) so a jail started as another uid can bind files from it.
 */
export function processScratch(): string {
  if (dir && existsSync(dir)) return dir;
  const base = tmpdir();
  const uid = process.getuid?.() ?? -1;
  const parent = ownDirectory(join(base, `goal-loop-${uid}`), uid);
  sweep(base, /^goal-loop-run-(\d+)-/, uid); // the flat layout of earlier versions
  let created: string;
  if (parent) {
    sweep(parent, /^run-(\d+)-/, uid);
    created = mkdtempSync(join(parent, `run-${process.pid}-`));
  } else {
    // Someone else holds our per-user path: a fresh, unguessable name beside it instead.
    sweep(base, new RegExp(`^goal-loop-${uid}-run-(\\d+)-`), uid);
    created = mkdtempSync(join(base, `goal-loop-${uid}-run-${process.pid}-`));
  }
  const fd = openSync(created, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    fchmodSync(fd, 0o755);
  } finally {
    closeSync(fd);
  }
  if (!dir) process.once('exit', () => rmSync(dir!, { recursive: true, force: true }));
  dir = created;
  return dir;
}

/** A fresh, unused path inside the scratch directory. */
export function scratchPath(label: string): string {
  return join(processScratch(), `${label}-${++seq}`);
}

/**
 * `path` as a real directory of ours, made if missing, not writable by others; undefined when it
 * is someone else's, a symlink or not a directory. Checked on a descriptor opened without
 * following symlinks, so what is checked is what gets its mode set. Traversable by all when we
 * are root (the jail's uid reads files below it), private otherwise.
 */
function ownDirectory(path: string, uid: number): string | undefined {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    return undefined; // a symlink (ELOOP) or not a directory (ENOTDIR)
  }
  try {
    const st = fstatSync(fd);
    if (!st.isDirectory() || st.uid !== uid) return undefined;
    fchmodSync(fd, uid === 0 ? 0o711 : 0o700);
    return path;
  } finally {
    closeSync(fd);
  }
}

/** Removes the directories in `parent` of our dead processes; anything else, or failing, is skipped. */
function sweep(parent: string, pattern: RegExp, uid: number): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const m = pattern.exec(name);
    if (!m || Number(m[1]) === process.pid || existsSync(`/proc/${m[1]}`)) continue;
    const path = join(parent, name);
    try {
      const st = lstatSync(path);
      if (st.isDirectory() && st.uid === uid) rmSync(path, { recursive: true, force: true });
    } catch {
      /* not ours to remove, or gone meanwhile */
    }
  }
}
