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
   * A resident jail (see SERVER): the privileged step ends in the server, which runs each command
   * it is sent in a cell of its own; `command` and `env` are then unused (see residentRequest).
   * `channel`: the host folder bound read-only at RESIDENT_CHANNEL; `unshare` (util-linux) makes the cells.
   * `keep`: cellKeptBinds, split by kind (the folders are bound by the cells' mount table, see cellMountTable).
   */
  resident?: { channel: string; unshare: string; keep: KeptBinds };
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
const privilegedStep = (usernsMax: number) => `"$1" -t devpts -o "newinstance,ptmxmode=0666,mode=0620,max=$2" devpts /dev/pts || exit 125
echo ${usernsMax} > /proc/sys/user/max_user_namespaces && read -r userns < /proc/sys/user/max_user_namespaces && [ "$userns" = ${usernsMax} ] ||
  { echo 'goal-loop: cannot turn off user namespaces in the jail' >&2; exit 125; }
s=$3
shift 3
exec "$s" --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"`;
const PRIVILEGED_STEP = privilegedStep(0);

/** Where a resident jail sees its channel folder (the cells' mount table, the commands' output FIFOs). */
export const RESIDENT_CHANNEL = '/run/goal-loop';

/**
 * User namespaces the server of a resident jail may hold at once: one per cell (the running one
 * and the two waiting), with room for cells still going away. Each cell sets its own limit to 0
 * before its command, so no command can make one.
 */
const CELL_USERNS = 8;

/** The privileged step of a resident jail: as PRIVILEGED_STEP (every capability goes), but its server may make its cells' user namespaces. */
const RESIDENT_STEP = privilegedStep(CELL_USERNS);

/**
 * A resident jail's server (trusted; the jail uid, no capability). Two cells wait ahead (each a process substitution: CELL_STEP, then
 * CELL_GATE), so the one after the next is made while the next command runs. It reads one
 * request from the bot on stdin (NUL-delimited: output FIFO, CPU soft and hard limit, command,
 * the number of environment entries, each `KEY=VALUE`), hands it to the oldest cell on that
 * cell's own pipe, waits for the cell to end (bash 5.1 waits for a process substitution), and
 * reports its exit status on stdout. The bot sends a request only once the previous status came.
 *
 * What no command can reach: the server is in the jail's pid namespace, every command in a child
 * namespace of its own (its /proc shows its own); the cell's stdin is a pipe of its own (a
 * command that writes into it writes to its own cell, whose request was read), its stdout and
 * stderr go to /dev/null until the gate opens the command's FIFO, and the gate closes every
 * other descriptor it inherited (the pipes of earlier cells); the server's stdin and stdout are
 * never inherited. A waiting cell holds no code but the gate's: a command cannot see it. A cell's
 * pid 1 ends only once every process of its namespace is gone (the kernel waits for them), so
 * when the status is written nothing the command started is alive. SIGPIPE is left as it is (a
 * command inherits it): a cell gone before its request ends the server, and the jail with it.
 * The bot closing stdin ends the server, and with it the jail.
 */
const SERVER = `set -u
case \${BASH_VERSINFO[0]}.\${BASH_VERSINFO[1]} in [0-4].*|5.0) echo "goal-loop: a resident jail needs bash 5.1 or newer" >&2; exit 125 ;; esac
pids=() tos=()
cell() {
  local to
  exec {to}> >(exec "$1" --user --map-user="\${11}" --map-group="\${12}" --keep-caps --pid --mount --ipc --fork --mount-proc --kill-child -- "$2" -p -c "$8" goal-loop-cell "$4" "$5" "$3" "\${@:13}" "$2" --norc --noprofile -c "$9" goal-loop-gate "$6" "$2" "\${10}" "$7" >/dev/null 2>&1)
  pids+=("$!") tos+=("$to")
}
cell "$@"
while :; do
  cell "$@"
  IFS= read -r -d '' out || exit 0
  IFS= read -r -d '' soft && IFS= read -r -d '' hard && IFS= read -r -d '' command && IFS= read -r -d '' n || exit 125
  case $n in ''|*[!0-9]*) exit 125 ;; esac
  request=("$out" "$soft" "$hard" "$command" "$n")
  while [ "$n" -gt 0 ]; do
    IFS= read -r -d '' entry || exit 125
    request+=("$entry")
    n=$((n - 1))
  done
  to=\${tos[0]} pid=\${pids[0]}
  tos=("\${tos[@]:1}") pids=("\${pids[@]:1}")
  printf '%s\\0' "\${request[@]}" >&"$to"
  exec {to}>&-
  wait "$pid"
  printf '\\036goal-loop-exit %s\\036\\n' "$?"
done`;

/** The descriptor of a cell's first kept folder (CELL_STEP), the next one above it, and so on. */
export const CELL_BIND_FD = 20;

/**
 * A cell's first step, pid 1 of the command's own pid, mount and IPC namespaces, still holding the
 * server's capabilities: fresh /tmp, home and /dev/shm (tmpfs, from the mount table the bot wrote
 * in the channel folder), then every capability cleared before the gate. (SysV objects and POSIX
 * message queues outlive their processes: in the jail's one IPC namespace a command's would reach
 * the next command, with the memory they pin.) What the jail bound
 * under those (a workspace or a toolchain in /tmp: `$4` folders and `$5` files follow) is bound
 * again on top, from a descriptor opened before the fresh mounts covered it (with what is bound
 * beneath it: the workspace's read-only .git). The folders are opened at CELL_BIND_FD on, and
 * the mount table binds them in the same `mount` as the tmpfs (two processes fewer per folder
 * and per cell: a cell is made while the bot's git or the command before runs).
 */
const CELL_STEP = `m=$1 fstab=$2 s=$3 nd=$4 nf=$5
shift 5
fd=${CELL_BIND_FD}
while [ "$nd" -gt 0 ]; do
  eval "exec $fd<\\"\\$1\\"" || exit 125
  fd=$((fd + 1)) nd=$((nd - 1))
  shift
done
keep=() fds=()
while [ "$nf" -gt 0 ]; do
  exec {f}<"$1" || exit 125
  keep+=("$1") fds+=("$f")
  shift; nf=$((nf - 1))
done
"$m" --no-canonicalize --all --fstab "$fstab" || exit 125
while [ "$fd" -gt ${CELL_BIND_FD} ]; do
  fd=$((fd - 1))
  eval "exec $fd<&-"
done
echo 0 > /proc/sys/user/max_user_namespaces && read -r un < /proc/sys/user/max_user_namespaces && [ "$un" = 0 ] || exit 125
for i in "\${!keep[@]}"; do
  p=\${keep[i]} f=\${fds[i]}
  /usr/bin/mkdir -p -- "\${p%/*}" && : >"$p" || exit 125
  "$m" --no-canonicalize --rbind "/proc/self/fd/$f" "$p" || exit 125
  exec {f}<&-
done
exec "$s" --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"`;

/**
 * A cell's gate (no capabilities, the jail uid, pid 1 of the cell): reads the one request on its
 * stdin, opens the command's output FIFO as the command's stdout and stderr (the gate's own stay
 * on /dev/null: its word on a job killed by a signal is no output of the command), sets the
 * command's CPU limit, and runs exactly what a cold jail runs (\`env -i\`, then bash with the start marker first), with
 * stdin on /dev/null; it exits with the command's status, and its namespace with it. A request
 * cut short runs nothing and prints no start marker.
 * \`read -d ''\` reads a pipe a byte at a time, so it never takes more than the request.
 */
const CELL_GATE = `for fd in /proc/$$/fd/*; do
  fd=\${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
IFS= read -r -d '' out && IFS= read -r -d '' soft && IFS= read -r -d '' hard && IFS= read -r -d '' command && IFS= read -r -d '' n || exit 125
case $out in ''|*[!a-z0-9-]*) exit 125 ;; esac
case $n in ''|*[!0-9]*) exit 125 ;; esac
env=()
while [ "$n" -gt 0 ]; do
  IFS= read -r -d '' entry || exit 125
  env+=("$entry")
  n=$((n - 1))
done
exec </dev/null 3>"$4/$out" || exit 125
ulimit -S -t "$soft" && ulimit -H -t "$hard" || exit 125
"$1" -i -- "\${env[@]}" "$2" -c "$3$command" >&3 2>&3 3>&- &
exec 3>&-
wait $!`;

/**
 * The bytes a resident jail's server reads for one command: its output FIFO (a name in the
 * channel folder), its CPU limit, the command and its environment (none may hold a NUL).
 */
export function residentRequest(out: string, cpu: { soft: string; hard: string }, command: string, env: Record<string, string>): Buffer {
  const entries = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return Buffer.from(`${[out, cpu.soft, cpu.hard, command, String(entries.length), ...entries].join('\0')}\0`);
}

/** Where a cell mounts a fresh tmpfs (see cellMountTable). */
export function cellFreshMounts(home: string): string[] {
  return ['/tmp', home, '/dev/shm'];
}

/**
 * What a cell binds again over its fresh mounts: the jail's own binds under them (the workspace,
 * toolchain folders, a package store), the topmost only (a bind beneath one comes with it).
 */
export function cellKeptBinds(spec: Pick<JailSpec, 'workspace' | 'toolchain' | 'writableDirs' | 'home'>): string[] {
  const fresh = cellFreshMounts(spec.home);
  const under = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);
  const binds = [spec.workspace, ...spec.toolchain.roBinds, ...(spec.writableDirs ?? [])].filter((p) => fresh.some((f) => under(p, f) && p !== f));
  return [...new Set(binds)].filter((p) => !binds.some((q) => q !== p && under(p, q))).sort();
}

/** cellKeptBinds by kind: a folder is bound by the mount table, a file by the cell step. */
export interface KeptBinds {
  dirs: readonly string[];
  files: readonly string[];
}

/**
 * The mount table of a resident jail's cells: the tmpfs each command gets afresh, then the
 * kept folders bound again from the descriptors CELL_STEP opened (the mount point made in the
 * fresh tmpfs: `X-mount.mkdir`). The paths are the bot's own (workspace, toolchain).
 */
export function cellMountTable(spec: { home: string; tmpBytes: number; homeBytes: number; features: BwrapFeatures; binds?: readonly string[] }): string {
  const sized = (bytes: number) => (spec.features.tmpfsSize ? `,size=${bytes}` : '');
  return [
    `goal-loop-tmp /tmp tmpfs nosuid,nodev,mode=1777${sized(spec.tmpBytes)} 0 0`,
    `goal-loop-home ${spec.home} tmpfs nosuid,nodev,mode=0755${sized(spec.homeBytes)} 0 0`,
    `goal-loop-shm /dev/shm tmpfs nosuid,nodev,mode=1777${sized(DEV_SHM_BYTES)} 0 0`,
    ...(spec.binds ?? []).map((p, i) => `/proc/self/fd/${CELL_BIND_FD + i} ${fstabField(p)} none rbind,X-mount.mkdir 0 0`),
    '',
  ].join('\n');
}

/** A path as one field of a mount table: whitespace, `#`, the backslash and control characters as libmount's octal escapes. */
export function fstabField(path: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is escaped
  return path.replace(/[\x00-\x20#\\\x7f]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

/** Held by PRIVILEGED_STEP only (see there). */
const STEP_CAPABILITIES = ['CAP_SYS_ADMIN', 'CAP_SYS_RESOURCE', 'CAP_SETPCAP'];

/** The full argv (program first) that runs `spec.command` in the jail. */
export function jailArgv(spec: JailSpec): string[] {
  // bash -p: no BASH_ENV and no exported functions while the step holds capabilities.
  // A resident jail's step ends in the server, which makes a cell per command (see SERVER).
  const r = spec.resident;
  const run = r
    ? [spec.bash, '-p', '-c', RESIDENT_STEP, 'goal-loop-jail-step', spec.mount, String(spec.maxPtys), spec.setpriv, spec.bash, '--norc', '--noprofile', '-c', SERVER, 'goal-loop-server'].concat([
        r.unshare,
        spec.bash,
        spec.setpriv,
        spec.mount,
        `${RESIDENT_CHANNEL}/fstab`,
        spec.envProgram,
        RESIDENT_CHANNEL,
        CELL_STEP,
        CELL_GATE,
        MARKER_LINE,
        String(spec.uid),
        String(spec.gid),
        String(r.keep.dirs.length),
        String(r.keep.files.length),
        ...r.keep.dirs,
        ...r.keep.files,
      ])
    : [spec.bash, '-p', '-c', PRIVILEGED_STEP, 'goal-loop-jail-step', spec.mount, String(spec.maxPtys), spec.setpriv].concat([
        spec.envProgram,
        '-i',
        '--',
        ...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
        spec.bash,
        '-c',
        MARKER_LINE + spec.command,
      ]);
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
  if (spec.resident) a.push(...dirs(dirname(RESIDENT_CHANNEL)), '--ro-bind', spec.resident.channel, RESIDENT_CHANNEL);
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
