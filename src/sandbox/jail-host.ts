import { spawnSync } from 'node:child_process';
import { closeSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { isAbsolute } from 'node:path';
import type { Logger } from 'pino';
import { SandboxUnavailableError } from '../ports/sandbox.js';
import type { BwrapFeatures } from './bwrap-args.js';
import type { CommandCgroup } from './cgroup.js';
import { isUnder } from './toolchain.js';

// What the jail needs to know about the host: bwrap's features, a safe workspace, live processes.

/** The jailed user's home inside the jail (never a host path). */
export const JAIL_HOME = '/home/goal-loop';

/** The operator's opt-out: run a bwrap without `--size` (its tmpfs mounts then have no cap). */
export const ALLOW_UNSIZED_TMPFS = 'GOAL_LOOP_ALLOW_UNSIZED_TMPFS';

/**
 * What the installed bwrap supports. A bwrap without `--size` (before 0.8; Ubuntu 22.04 ships
 * 0.6) cannot cap /tmp, $HOME and /dev/shm, so it is refused unless the operator sets
 * GOAL_LOOP_ALLOW_UNSIZED_TMPFS=1, which is then logged as a warning.
 */
export function bwrapFeatures(bwrap: string, env: NodeJS.ProcessEnv = process.env, logger?: Pick<Logger, 'warn'>): BwrapFeatures {
  const help = spawnSync(bwrap, ['--help'], { encoding: 'utf8', timeout: 10_000 });
  const text = `${help.stdout ?? ''}${help.stderr ?? ''}`;
  const missing = ['--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', '--clearenv', '--perms'].filter((f) => !text.includes(f));
  if (help.error || missing.length > 0) {
    throw new SandboxUnavailableError(help.error ? `cannot run ${bwrap}: ${help.error.message}` : `${bwrap} is too old (no ${missing.join(', ')}): install bubblewrap 0.5 or newer (0.8 recommended)`);
  }
  const features = { tmpfsSize: text.includes('--size') };
  if (!features.tmpfsSize) {
    const version = bwrapVersion(bwrap);
    const what = `${bwrap} (${version}) cannot size a tmpfs (\`--size\` came in bubblewrap 0.8.0): the jail's /tmp, $HOME and /dev/shm would have no cap, and a task could fill the host's memory`;
    if (env.GOAL_LOOP_ALLOW_UNSIZED_TMPFS !== '1') {
      throw new SandboxUnavailableError(
        `${what}.\nFix: install bubblewrap 0.8.0 or newer (e.g. from your distribution's backports, or build it from https://github.com/containers/bubblewrap), or set ${ALLOW_UNSIZED_TMPFS}=1 to run with unsized tmpfs mounts anyway`,
      );
    }
    logger?.warn({ bwrap, version }, `TMPFS NOT SIZED (${ALLOW_UNSIZED_TMPFS}=1): ${what}. Install bubblewrap 0.8.0 or newer.`);
  }
  return features;
}

function bwrapVersion(bwrap: string): string {
  const out = spawnSync(bwrap, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  const version = /\d+\.\d+(\.\d+)?/.exec(out.stdout ?? '')?.[0];
  return version ? `bubblewrap ${version}` : 'version unknown';
}

/** The workspace must be an existing directory that is not a system directory (it gets chowned). */
export function checkWorkspace(cwd: string): string {
  if (!isAbsolute(cwd)) throw new SandboxUnavailableError(`the workspace must be an absolute path: ${cwd}`);
  let real: string;
  try {
    real = realpathSync(cwd);
    if (!statSync(real).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    throw new SandboxUnavailableError(`the workspace ${cwd} is not a directory: ${(err as Error).message}`);
  }
  if (isSystemOrHome(real)) {
    throw new SandboxUnavailableError(`refusing to use ${real} as a sandbox workspace: it is a system or home directory`);
  }
  return real;
}

const SYSTEM_FOLDERS = ['/usr', '/etc', '/proc', '/sys', '/dev', '/boot', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/run', JAIL_HOME];

/** A top-level folder, a system folder (or one inside it), the user's home or an ancestor of it, or the temp root itself: never bound writable. */
function isSystemOrHome(real: string): boolean {
  return real.split('/').filter(Boolean).length < 2 || SYSTEM_FOLDERS.some((f) => isUnder(real, f)) || isUnder(homedir(), real) || real === tmpdir();
}

/**
 * The package store a setup gets read-write: an absolute folder, its own real path (no link on
 * the way, so the bind is where the caller meant), a directory, apart from the workspace (neither
 * inside the other) and from the system's folders.
 */
export function checkPackageStore(dir: string, workspace: string): string {
  let real: string | undefined;
  try {
    real = isAbsolute(dir) ? realpathSync(dir) : undefined;
    if (real && !lstatSync(real).isDirectory()) real = undefined;
  } catch {
    real = undefined;
  }
  if (!real || real !== dir) throw new SandboxUnavailableError(`the package store ${dir} is not a folder at its real path`);
  if (isSystemOrHome(real) || isUnder(real, workspace) || isUnder(workspace, real)) {
    throw new SandboxUnavailableError(`refusing ${real} as a package store: it is a system folder, or the workspace holds it or is in it`);
  }
  return real;
}

/** Room for the head of /proc/<pid>/status: its State and Uid lines come within the first few hundred bytes. */
const statusHead = Buffer.alloc(1024);

/** Host pids of the live (not zombie) processes whose real uid is `uid`. */
export function livePidsOfUid(uid: number): number[] {
  const out: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    let fd: number | undefined;
    try {
      // One read of the head, into one buffer: a scan of the host's processes stays cheap.
      fd = openSync(`/proc/${name}/status`, 'r');
      const status = statusHead.toString('latin1', 0, readSync(fd, statusHead, 0, statusHead.length, 0));
      const m = /\nUid:\t(\d+)/.exec(status);
      if (m && Number(m[1]) === uid && !/\nState:\t[ZX]/.test(status)) out.push(Number(name));
    } catch {
      /* exited meanwhile */
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
  return out;
}

/**
 * Whether the process `pid` is one of `roots` or descends from one, by its chain of parents
 * (/proc). A process of another jail never does: it cannot leave its own pid namespace, whose
 * orphans go to that jail's init.
 */
export function descendsFrom(pid: number, roots: ReadonlySet<number>): boolean {
  if (roots.size === 0) return false;
  for (let p: number | undefined = pid, hops = 0; p !== undefined && p > 1 && hops < 64; hops++) {
    if (roots.has(p)) return true;
    p = parentOf(p);
  }
  return false;
}

function parentOf(pid: number): number | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/stat`, 'r');
    const stat = statusHead.toString('latin1', 0, readSync(fd, statusHead, 0, statusHead.length, 0));
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

export function realOrUndefined(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(s)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function mib(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`;
}

/**
 * Returns once no process of the command is left. The kernel kills the whole pid namespace
 * when its init ends, but bwrap may report the exit while the last processes are still dying.
 * This waits for the cgroup to empty (killing any straggler in it) and, for a root bot with a
 * uid per workspace, for the jail uid to have no live process (a task leaves its cgroup a
 * moment before it is dead; no kill on that path, the uid could be shared), apart from the
 * processes of the resident jails waiting for a next command (`waiting`: their launchers' pids).
 */
export async function awaitGone(opts: {
  uid: number;
  cgroup: Pick<CommandCgroup, 'pids'> | undefined;
  perWorkspaceUid: boolean;
  waiting: ReadonlySet<number>;
  logger?: Pick<Logger, 'warn'> | undefined;
}): Promise<void> {
  const { uid, cgroup, perWorkspaceUid } = opts;
  if (!cgroup && !perWorkspaceUid) return;
  const started = Date.now();
  const budgetMs = cgroup ? 10_000 : 2_000;
  let killAt = 1000;
  // The last processes usually go within a millisecond or two of the launcher: look again
  // soon, then less often.
  for (let delay = 1; ; delay = Math.min(delay * 2, 10)) {
    const inCgroup = cgroup?.pids() ?? [];
    if (inCgroup.length === 0 && (!perWorkspaceUid || livePidsOfUid(uid).every((pid) => descendsFrom(pid, opts.waiting)))) return;
    const elapsed = Date.now() - started;
    if (elapsed >= budgetMs) break;
    if (inCgroup.length > 0 && elapsed >= killAt) {
      killAt += 1000;
      for (const pid of inCgroup) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    }
    await new Promise((r) => setTimeout(r, delay));
  }
  opts.logger?.warn({ uid }, 'jailed processes still exiting after the command ended');
}
