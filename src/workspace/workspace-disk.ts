import { randomBytes } from 'node:crypto';
import { lstat, readdir, realpath, rename, rm } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { execa } from 'execa';

/**
 * What goal-loop keeps under its workspace root (GOAL_LOOP_WORKSPACES), for `status` and `clean`:
 *
 *   <root>/<repository>/<goal>/   a goal's clone, with `<goal>.lock`, `.logs`, `.fresh-clone`,
 *                                 `.trusted-gitconfig` beside it
 *   <root>/mirrors/ warm/ setup-cache/ package-stores/   the caches (MirrorCache, its parked
 *                                 trees, SetupCache, PackageStores)
 *
 * Only real folders count: a symlink is never followed, measured or removed through.
 */
export const CACHE_DIRS: readonly string[] = ['mirrors', 'warm', 'setup-cache', 'package-stores'];

/** Every goal workspace under `root` (a real path), as real paths. */
export async function listWorkspaces(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const repo of await readdir(root, { withFileTypes: true }).catch(() => [])) {
    if (!repo.isDirectory() || repo.name.startsWith('.') || CACHE_DIRS.includes(repo.name)) continue;
    for (const e of await readdir(join(root, repo.name), { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory() && !e.name.startsWith('.') && !/\.(logs|fresh-clone)$/.test(e.name)) out.push(join(root, repo.name, e.name));
    }
  }
  return out.sort();
}

/** A workspace and what is kept beside it (not its lock: whoever holds it removes it). */
export function workspaceFiles(dir: string): string[] {
  return [dir, `${dir}.logs`, `${dir}.fresh-clone`, `${dir}.trusted-gitconfig`];
}

/**
 * Blocks in use under `paths` together (`du -P`: links not followed, a file linked twice counted
 * once), what they cost the disk. Missing paths count 0; unreadable parts are left out (a
 * jail-owned folder), so the figure is a lower bound then. Undefined when `du` gives no total.
 */
export async function diskBytes(paths: readonly string[]): Promise<number | undefined> {
  const present: string[] = [];
  for (const p of paths) if (await lstat(p).catch(() => undefined)) present.push(p);
  if (present.length === 0) return 0;
  const r = await execa('du', ['-P', '-s', '-c', '--block-size=1', '--', ...present], { env: { LC_ALL: 'C' }, reject: false, timeout: 120_000 });
  const total = /^(\d+)\s/.exec(r.stdout.trim().split('\n').at(-1) ?? '');
  return total ? Number(total[1]) : undefined;
}

/** `1.2 GB`, `340 MB`, `12 KB`, `0 B` (powers of 1024, as `du -h`). */
export function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined) return '? B';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let n = bytes;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u += 1;
  }
  return `${u === 0 || n >= 100 ? Math.round(n) : n.toFixed(1).replace(/\.0$/, '')} ${units[u]}`;
}

/**
 * True when `path` is under `root` (a real path) by its real path and is not itself a symlink:
 * what goal-loop may remove. Missing: false.
 */
export async function ownedBy(root: string, path: string): Promise<boolean> {
  const st = await lstat(path).catch(() => undefined);
  if (!st || st.isSymbolicLink()) return false;
  const real = await realpath(path).catch(() => undefined);
  return real !== undefined && real !== root && real.startsWith(`${root}${sep}`);
}

/**
 * Removes `path` if goal-loop owns it (see ownedBy): renamed out of the way first, so a half
 * removed workspace never looks like one, then deleted (links inside are unlinked, never followed).
 */
export async function removeOwned(root: string, path: string): Promise<boolean> {
  if (!(await ownedBy(root, path))) return false;
  const trash = join(root, `.trash-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await rename(path, trash);
  } catch {
    return false;
  }
  await rm(trash, { recursive: true, force: true });
  return true;
}

/**
 * One line of what goal-loop holds on disk under `root`, for `status`:
 * `disk: workspaces 3 (1.2 GB), parked trees 2 (300 MB), setup cache (600 MB), package stores (250 MB), mirrors (40 MB)`.
 * Undefined when the root does not exist.
 */
export async function diskLine(root: string): Promise<string | undefined> {
  const real = await realpath(root).catch(() => undefined);
  if (!real) return undefined;
  const workspaces = await listWorkspaces(real);
  const cache = async (name: string) => ((await ownedBy(real, join(real, name))) ? diskBytes([join(real, name)]) : 0);
  const [ws, warm, setup, stores, mirrors] = await Promise.all([diskBytes(workspaces.flatMap(workspaceFiles)), cache('warm'), cache('setup-cache'), cache('package-stores'), cache('mirrors')]);
  const parked = (await readdir(join(real, 'warm'), { withFileTypes: true }).catch(() => [])).filter((d) => d.isDirectory() && !d.name.startsWith('.'));
  let trees = 0;
  for (const pool of parked) trees += (await readdir(join(real, 'warm', pool.name)).catch(() => [] as string[])).filter((n) => /^\d{15}-\d+-[0-9a-f]{8}$/.test(n)).length;
  return `disk: workspaces ${workspaces.length} (${formatBytes(ws)}), parked trees ${trees} (${formatBytes(warm)}), setup cache (${formatBytes(setup)}), package stores (${formatBytes(stores)}), mirrors (${formatBytes(mirrors)})`;
}
