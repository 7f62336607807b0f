import { dirname, join } from 'node:path';
import type { Toolchain } from './toolchain.js';

/** What the installed bwrap supports beyond the basics (checked once with `bwrap --help`). */
export interface BwrapFeatures {
  /** `--disable-userns` (0.8.0): no nested user namespaces inside the jail. */
  disableUserns: boolean;
  /** `--size` for tmpfs (0.8.0). */
  tmpfsSize: boolean;
}

/** Everything needed to build one jailed command line. */
export interface JailSpec {
  /**
   * `nested`: the bot is root. A privileged outer bwrap (pid namespace, mounts) switches to the
   * jail uid with setpriv and runs an unprivileged inner bwrap (all namespaces, no capabilities,
   * no further user namespaces). The uid outside is then a real non-root uid, so RLIMIT_NPROC
   * binds, while the outer, still root, can reach the workspace wherever it lives.
   * `direct`: one unprivileged bwrap, as the bot's own uid when it is not root.
   */
  mode: 'nested' | 'direct';
  /** The bot is root: switch to `uid`/`gid` with setpriv before the (inner) bwrap. */
  dropToUid: boolean;
  bwrap: string;
  /** setpriv (util-linux), when `dropToUid`. */
  setpriv?: string;
  bash: string;
  uid: number;
  gid: number;
  toolchain: Pick<Toolchain, 'topLevel' | 'roBinds' | 'masks'>;
  /** Read-only files placed in the jail (generated passwd, group, hosts, gitconfig…). */
  files: Array<{ src: string; dest: string }>;
  /** An empty host file, bound over the paths in `toolchain.masks`. */
  emptyFile: string;
  /** Real path of the workspace; bound read-write at the same path. */
  workspace: string;
  /**
   * Bind the workspace read-only: for processes that run beside the bot's own git and file
   * tools (MCP servers), so nothing can change the tree between a check and its use.
   */
  workspaceReadOnly?: boolean;
  /** The workspace has a `.git` (bound read-only over itself). */
  hasGitDir: boolean;
  /** Private tmpfs home. */
  home: string;
  env: Record<string, string>;
  network: boolean;
  features: BwrapFeatures;
  tmpBytes: number;
  homeBytes: number;
  command: string;
}

/** Printed by the jail before the command starts: output without it came from bwrap itself. */
export const START_MARKER = '\x1egoal-loop-jail-started\x1e';
const STARTER = `printf '\\036goal-loop-jail-started\\036' && exec "$0" -c "$1"`;

/** The full argv (program first) that runs `spec.command` in the jail. */
export function jailArgv(spec: JailSpec): string[] {
  const run = [spec.bash, '-c', STARTER, spec.bash, spec.command];
  if (spec.dropToUid && !spec.setpriv) throw new Error('switching to the jail uid needs setpriv');
  const drop = spec.dropToUid ? [spec.setpriv!, `--reuid=${spec.uid}`, `--regid=${spec.gid}`, '--clear-groups', '--no-new-privs', '--'] : [];
  if (spec.mode === 'direct') {
    return [...drop, spec.bwrap, ...isolation(spec), ...layout(spec, 'direct'), ...privateHome(spec), ...environment(spec), '--', ...run];
  }
  const outer = [
    spec.bwrap,
    '--unshare-pid',
    '--die-with-parent',
    '--cap-drop', 'ALL',
    '--cap-add', 'CAP_SETUID',
    '--cap-add', 'CAP_SETGID',
    ...layout(spec, 'outer'),
    '--clearenv',
    '--setenv', 'PATH', '/usr/bin:/bin',
    '--',
  ];
  const inner = [
    spec.bwrap,
    ...isolation(spec),
    '--bind', '/', '/',
    '--proc', '/proc',
    ...devices(spec),
    ...privateHome(spec),
    ...environment(spec),
    '--',
  ];
  return [...outer, ...drop, ...inner, ...run];
}

/** Namespaces, capabilities and session of the process that runs the command. */
function isolation(spec: JailSpec): string[] {
  return [
    '--unshare-all',
    ...(spec.network ? ['--share-net'] : []),
    '--unshare-user',
    ...(spec.features.disableUserns ? ['--disable-userns'] : []),
    '--die-with-parent',
    '--new-session',
    '--cap-drop', 'ALL',
    '--hostname', 'goal-loop-jail',
  ];
}

/** The filesystem: the toolchain read-only, private /tmp, the workspace the only writable bind. */
function layout(spec: JailSpec, role: 'outer' | 'direct'): string[] {
  const a: string[] = ['--ro-bind', '/usr', '/usr'];
  for (const t of spec.toolchain.topLevel) {
    if (t.kind === 'symlink') a.push('--symlink', t.target, t.path);
    else a.push('--ro-bind', t.path, t.path);
  }
  a.push('--perms', '0755', '--dir', '/etc');
  for (const f of spec.files) a.push(...dirs(dirname(f.dest)), '--ro-bind', f.src, f.dest);
  // The outer (root) shows the inner bwrap the host's /proc; the inner mounts its own over it.
  a.push(...(role === 'outer' ? ['--bind', '/proc', '/proc'] : ['--proc', '/proc']));
  a.push(...devices(spec));
  a.push('--perms', '01777', ...size(spec, spec.tmpBytes), '--tmpfs', '/tmp');
  // The home tmpfs is mounted by the process that runs as the jail uid, so the jail owns it.
  if (role === 'outer') a.push(...dirs(spec.home));
  for (const p of spec.toolchain.roBinds) a.push(...dirs(dirname(p)), '--ro-bind', p, p);
  for (const m of spec.toolchain.masks) a.push('--ro-bind', spec.emptyFile, m);
  a.push(...dirs(dirname(spec.workspace)), spec.workspaceReadOnly ? '--ro-bind' : '--bind', spec.workspace, spec.workspace);
  if (spec.hasGitDir) a.push('--ro-bind', join(spec.workspace, '.git'), join(spec.workspace, '.git'));
  return a;
}

/** Size of the jail's /dev/shm: enough for POSIX semaphores and small shared memory. */
export const DEV_SHM_BYTES = 64 * 1024 ** 2;

/**
 * bwrap's `--dev` is an unsized tmpfs the jail uid can write (and its /dev/shm a plain directory
 * on it): /dev is made read-only and /dev/shm gets its own capped tmpfs. The device nodes and
 * /dev/pts are separate mounts, so they keep working.
 */
function devices(spec: JailSpec): string[] {
  return ['--dev', '/dev', '--perms', '01777', ...size(spec, DEV_SHM_BYTES), '--tmpfs', '/dev/shm', '--remount-ro', '/dev'];
}

function privateHome(spec: JailSpec): string[] {
  return [...size(spec, spec.homeBytes), '--tmpfs', spec.home];
}

function environment(spec: JailSpec): string[] {
  const a = ['--clearenv'];
  for (const [k, v] of Object.entries(spec.env)) a.push('--setenv', k, v);
  a.push('--chdir', spec.workspace);
  return a;
}

function size(spec: JailSpec, bytes: number): string[] {
  return spec.features.tmpfsSize ? ['--size', String(bytes)] : [];
}

/** `--dir` for a path and each of its ancestors, world-traversable (created by root in `nested`). */
function dirs(path: string): string[] {
  const out: string[] = [];
  const parts = path.split('/').filter(Boolean);
  for (let i = 1; i <= parts.length; i++) out.push('--perms', '0755', '--dir', `/${parts.slice(0, i).join('/')}`);
  return out;
}
