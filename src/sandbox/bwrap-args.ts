import { dirname, join } from 'node:path';
import type { Toolchain } from './toolchain.js';

/** What the installed bwrap supports beyond the basics (checked once with `bwrap --help`). */
export interface BwrapFeatures {
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
  /** setpriv (util-linux): switches to the jail uid when `dropToUid`, and clears the capabilities the pty mount needed. */
  setpriv: string;
  /** mount (util-linux), under /usr: mounts the jail's own capped /dev/pts. */
  mount: string;
  /** The most ptys the jail may hold at once (its devpts `max=`). */
  maxPtys: number;
  /** env (coreutils), under /usr: gives the command its environment after the privileged step. */
  envProgram: string;
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
  /** Host folders bound read-write at the same path (a setup's package store), checked by the caller. */
  writableDirs?: readonly string[];
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
  /**
   * A warm jail: the privileged step ends in GATE instead of the command, which waits for the
   * command and its environment on stdin (`command` and `env` are then unused; see gateRequest).
   */
  gate?: boolean;
}

/** Printed by the jail before the command starts: output without it came from bwrap itself. */
export const START_MARKER = '\x1egoal-loop-jail-started\x1e';
/**
 * The first line of the command's own `bash -c` (no bash of its own just to print the marker).
 * bash runs a `-c` string line by line, so the marker comes out before the command's first
 * line is even parsed (a syntax error there is the command's, not the jail's); bash's line
 * numbers in the command are one higher.
 */
const MARKER_LINE = `printf '\\036goal-loop-jail-started\\036' || exit 125\n`;

/**
 * The one step that holds capabilities (in the jail's own user namespace only), then drops them.
 * - bwrap's `--dev` mounts a devpts without `max=`, and every devpts instance draws on the host's
 *   one kernel.pty.max pool: one jail could take every pty of the host's other jails and
 *   containers. The jail mounts its own devpts with `max=` (CAP_SYS_ADMIN).
 * - bwrap's `--disable-userns` moves the command into a nested user namespace, where that mount
 *   is impossible. Instead the jail's user namespace gets user.max_user_namespaces = 0
 *   (CAP_SYS_RESOURCE): neither the command nor anything it starts can make a user namespace,
 *   and without the capability the limit cannot be raised again.
 * - setpriv clears every capability set (the bounding set needs CAP_SETPCAP) before the command.
 * The step runs with only a fixed PATH: the command's environment holds what the repo config
 * chose (`setup_env`, an MCP server's `env`: LD_PRELOAD, LIBMOUNT_*…), so `env -i` gives it to
 * the command only, after the capabilities are gone. Any failure stops before the start marker,
 * so the command never runs.
 */
const PRIVILEGED_STEP = `"$1" -t devpts -o "newinstance,ptmxmode=0666,mode=0620,max=$2" devpts /dev/pts || exit 125
echo 0 > /proc/sys/user/max_user_namespaces && read -r userns < /proc/sys/user/max_user_namespaces && [ "$userns" = 0 ] ||
  { echo 'goal-loop: cannot turn off user namespaces in the jail' >&2; exit 125; }
s=$3
shift 3
exec "$s" --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"`;

/**
 * The last trusted step of a warm jail (after setpriv cleared every capability, as the jail uid):
 * waits on stdin (a pipe from the bot) for one request, NUL-delimited: the command, the number of
 * environment entries, then each `KEY=VALUE`; then runs exactly what a cold jail runs, with stdin
 * back on /dev/null. A request cut short (the bot discarded the jail, or died) runs nothing and
 * prints no start marker. Until the request arrives this bash is the only process of the jail
 * that is not bwrap's: nothing from the repository, the task or the model has run in it.
 * `read -d ''` reads the pipe a byte at a time, so it never takes more than the request.
 */
const GATE = `IFS= read -r -d '' command || exit 125
IFS= read -r -d '' n || exit 125
case $n in ''|*[!0-9]*) exit 125 ;; esac
env=()
while [ "$n" -gt 0 ]; do
  IFS= read -r -d '' entry || exit 125
  env+=("$entry")
  n=$((n - 1))
done
exec "$1" -i -- "\${env[@]}" "$2" -c "$3$command" </dev/null`;

/** The bytes a warm jail's GATE reads: the command and its environment (neither may hold a NUL). */
export function gateRequest(command: string, env: Record<string, string>): Buffer {
  const entries = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return Buffer.from(`${[command, String(entries.length), ...entries].join('\0')}\0`);
}

/** Held by PRIVILEGED_STEP only (see there). */
const STEP_CAPABILITIES = ['CAP_SYS_ADMIN', 'CAP_SYS_RESOURCE', 'CAP_SETPCAP'];

/** The full argv (program first) that runs `spec.command` in the jail. */
export function jailArgv(spec: JailSpec): string[] {
  // bash -p: no BASH_ENV and no exported functions while the step holds capabilities.
  const command = spec.gate
    ? [spec.bash, '--norc', '--noprofile', '-c', GATE, 'goal-loop-gate', spec.envProgram, spec.bash, MARKER_LINE]
    : [spec.envProgram, '-i', '--', ...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`), spec.bash, '-c', MARKER_LINE + spec.command];
  const run = [spec.bash, '-p', '-c', PRIVILEGED_STEP, 'goal-loop-jail-step', spec.mount, String(spec.maxPtys), spec.setpriv, ...command];
  const drop = spec.dropToUid ? [spec.setpriv, `--reuid=${spec.uid}`, `--regid=${spec.gid}`, '--clear-groups', '--no-new-privs', '--'] : [];
  if (spec.mode === 'direct') {
    return [...drop, spec.bwrap, ...isolation(spec), ...layout(spec, 'direct'), ...privateHome(spec), ...READ_ONLY_ROOT, ...environment(spec), '--', ...run];
  }
  const outer = [
    spec.bwrap,
    '--unshare-pid',
    '--die-with-parent',
    '--cap-drop',
    'ALL',
    '--cap-add',
    'CAP_SETUID',
    '--cap-add',
    'CAP_SETGID',
    ...layout(spec, 'outer'),
    ...READ_ONLY_ROOT,
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--',
  ];
  const inner = [spec.bwrap, ...isolation(spec), '--bind', '/', '/', '--proc', '/proc', ...devices(spec, 'jail'), ...privateHome(spec), ...environment(spec), '--'];
  return [...outer, ...drop, ...inner, ...run];
}

/**
 * Last of the mounts: the root tmpfs bwrap makes has no size, and in `direct` mode the jail uid
 * owns it; writable, it would take half the host's memory, or an /etc/ld.so.preload. Every place
 * the command may write (workspace, /tmp, home, /dev/shm) is its own mount and stays writable.
 */
const READ_ONLY_ROOT = ['--remount-ro', '/'];

/** Namespaces, capabilities and session of the process that runs the command. */
function isolation(spec: JailSpec): string[] {
  return [
    '--unshare-all',
    ...(spec.network ? ['--share-net'] : []),
    '--unshare-user',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    ...STEP_CAPABILITIES.flatMap((c) => ['--cap-add', c]),
    '--hostname',
    'goal-loop-jail',
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
  a.push(...devices(spec, role === 'outer' ? 'outer' : 'jail'));
  a.push('--perms', '01777', ...size(spec, spec.tmpBytes), '--tmpfs', '/tmp');
  // The home tmpfs is mounted by the process that runs as the jail uid, so the jail owns it.
  if (role === 'outer') a.push(...dirs(spec.home));
  for (const p of spec.toolchain.roBinds) a.push(...dirs(dirname(p)), '--ro-bind', p, p);
  for (const m of spec.toolchain.masks) a.push('--ro-bind', spec.emptyFile, m);
  a.push(...dirs(dirname(spec.workspace)), spec.workspaceReadOnly ? '--ro-bind' : '--bind', spec.workspace, spec.workspace);
  if (spec.hasGitDir) a.push('--ro-bind', join(spec.workspace, '.git'), join(spec.workspace, '.git'));
  for (const d of spec.writableDirs ?? []) a.push(...dirs(dirname(d)), '--bind', d, d);
  return a;
}

/** Size of the jail's /dev/shm: enough for POSIX semaphores and small shared memory. */
export const DEV_SHM_BYTES = 64 * 1024 ** 2;

/** Host device nodes the jail gets (what bwrap's `--dev` binds). */
const DEVICE_NODES = ['null', 'zero', 'full', 'random', 'urandom', 'tty'];

/**
 * The outer (root) bwrap's /dev only serves the inner bwrap, which builds the jail's own. The
 * jail's /dev is built here rather than with `--dev`, whose devpts has no `max=` (and whose
 * tmpfs has no size): a small tmpfs with the host's harmless device nodes bound in, an empty
 * /dev/pts for PRIVILEGED_STEP to mount the capped devpts on, a capped /dev/shm; then read-only.
 */
function devices(spec: JailSpec, role: 'outer' | 'jail'): string[] {
  const shm = ['--perms', '01777', ...size(spec, DEV_SHM_BYTES), '--tmpfs', '/dev/shm'];
  if (role === 'outer') return ['--dev', '/dev', ...shm, '--remount-ro', '/dev'];
  const a = ['--perms', '0755', ...size(spec, DEV_BYTES), '--tmpfs', '/dev'];
  for (const n of DEVICE_NODES) a.push('--dev-bind', `/dev/${n}`, `/dev/${n}`);
  for (const [link, target] of DEVICE_LINKS) a.push('--symlink', target, `/dev/${link}`);
  a.push('--perms', '0755', '--dir', '/dev/pts', ...shm, '--remount-ro', '/dev');
  return a;
}

const DEVICE_LINKS = [
  ['fd', '/proc/self/fd'],
  ['stdin', '/proc/self/fd/0'],
  ['stdout', '/proc/self/fd/1'],
  ['stderr', '/proc/self/fd/2'],
  ['ptmx', 'pts/ptmx'],
] as const;

/** The jail's /dev tmpfs holds only nodes, links and two directories. */
const DEV_BYTES = 64 * 1024;

function privateHome(spec: JailSpec): string[] {
  return [...size(spec, spec.homeBytes), '--tmpfs', spec.home];
}

/** Only a fixed PATH for the privileged step; the command's own environment comes after it (`env -i`). */
function environment(spec: JailSpec): string[] {
  return ['--clearenv', '--setenv', 'PATH', '/usr/bin:/bin', '--chdir', spec.workspace];
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
