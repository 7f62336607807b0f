import { spawn } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type CommandRequest, type CommandResult, type SandboxProcess, SandboxUnavailableError, type SpawningSandbox, type SpawnRequest } from '../ports/sandbox.js';
import { type BwrapFeatures, cellKeptBinds, cellMountTable, type JailSpec, jailArgv, type KeptBinds, residentRequest } from './bwrap-args.js';
import { type CgroupSupport, type CommandCgroup, createCommandCgroup, detectCgroups } from './cgroup.js';
import { sandboxEnvironment } from './environment.js';
import { type EtcFiles, JailEtc } from './jail-etc.js';
import { awaitGone, bwrapFeatures, checkPackageStore, checkWorkspace, fnv1a, JAIL_HOME, lstatOrUndefined, mib, realOrUndefined } from './jail-host.js';
import { LAUNCH_ENV, LAUNCHER, launchLimits, limitText, systemProgram } from './jail-launch.js';
import { explainJailFailure, StartFilter } from './jail-start.js';
import { type CaptureLimits, DEFAULT_CAPTURE, OutputCapture } from './output-capture.js';
import { ResidentJail } from './resident-jail.js';
import { ResidentJails } from './resident-jails.js';
import { openInputChannel, runCaptured } from './run-captured.js';
import { scratchPath } from './scratch.js';
import { shellLine, wrapSpawned } from './spawned-process.js';
import { discoverToolchain, findProgram, type Toolchain } from './toolchain.js';
import { treeIdentity } from './tree-identity.js';
import { HandoverMemo, handOverWorkspace } from './workspace-owner.js';

/** Hard limits of one jailed command. */
export interface JailLimits {
  /** RLIMIT_NPROC of the jail uid: processes and threads (and a pids cgroup where available). */
  maxProcesses: number;
  /** RLIMIT_FSIZE: the largest file a command may write. */
  maxFileBytes: number;
  /** RLIMIT_NOFILE. */
  maxOpenFiles: number;
  /** RLIMIT_CPU per process; default: the command's timeout times the number of cores (a backstop). */
  cpuSeconds?: number;
  /** Memory of all the command's processes together (cgroup; tmpfs pages count too). */
  memoryBytes: number;
  /** Size of the private /tmp and of the private home. */
  tmpBytes: number;
  homeBytes: number;
  /** The most ptys the jail may hold at once (its own devpts `max=`; the host's pool is shared). */
  maxPtys: number;
}

/** Workspaces whose last handover is remembered (see handOver). */
const MEMOS_KEPT = 32;

export const DEFAULT_JAIL_LIMITS: Readonly<JailLimits> = Object.freeze({
  maxProcesses: 4096,
  maxFileBytes: 1024 ** 3,
  maxOpenFiles: 8192,
  memoryBytes: 4 * 1024 ** 3,
  tmpBytes: 2 * 1024 ** 3,
  homeBytes: 1024 ** 3,
  maxPtys: 32,
});

/** The jail's home: a private tmpfs. */
export { JAIL_HOME } from './jail-host.js';
/** Jail uids, when the bot is root: one per workspace, in [base, base + span). */
export const DEFAULT_UID_BASE = 1_000_000_000;
export const DEFAULT_UID_SPAN = 1_000_000;

export interface BwrapSandboxOptions {
  bwrapPath?: string;
  setprivPath?: string;
  limits?: Partial<JailLimits>;
  capture?: CaptureLimits;
  /**
   * Fixed jail uid (and gid) when the bot is root; default: one derived from the workspace path,
   * so concurrent goals do not share a process limit.
   */
  uid?: number;
  uidBase?: number;
  uidSpan?: number;
  /** `off` never uses a cgroup (the memory limit is then not enforced). */
  cgroups?: 'auto' | 'off';
  /**
   * Default `nested` when the bot is root, else `direct`. A root bot may ask for `direct`: one
   * unprivileged bwrap started as the jail uid (setpriv), which then needs the workspace and the
   * toolchain reachable by that uid (not under a 0700 home).
   */
  jailMode?: 'nested' | 'direct';
  toolchain?: Toolchain;
  logger?: Logger;
  /** Where GOAL_LOOP_ALLOW_UNSIZED_TMPFS is read (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * Run a workspace's run steps and verifications in one resident jail, each in a cell of its own
   * (default true; see resident-jail.ts). An unused one ends after `warmIdleMs` (default 30 s).
   */
  warm?: boolean;
  warmIdleMs?: number;
}

/** A request larger than this (command and variables) runs in a cold jail. */
const RESIDENT_REQUEST_BYTES = 64 * 1024;

/**
 * The bubblewrap jail: every command the repository or the goal supplies runs here.
 *
 * - no network (not even the host's loopback) unless the request asks for it (setup only);
 * - a cleared environment: PATH, HOME, CI, LANG, TMPDIR and the GOAL_* variables;
 * - /usr and the toolchain read-only, a generated /etc (no host secrets), private /tmp and home;
 * - the workspace the only writable place, its `.git` read-only;
 * - no capabilities, no new privileges, no nested user namespaces, a new session;
 * - a non-root uid outside the jail when the bot is root, so process limits bind;
 * - process-count, file-size, open-file and CPU limits; memory and pids through a cgroup where
 *   one is writable;
 * - a pid namespace: when the command ends, times out or is aborted, every process it started
 *   dies with it;
 * - run steps and verifications run in a workspace's resident jail (resident-jail.ts), each in a
 *   cell of its own: its own pid, mount and IPC namespaces, fresh /tmp, home and /dev/shm, no
 *   capabilities; the cell is made ahead by the jail's trusted server. Setup (network, package
 *   store) and MCP servers get a jail of their own. `dispose()` ends the resident jails.
 */
export class BwrapSandbox implements SpawningSandbox {
  readonly kind = 'bwrap';
  readonly mode: 'nested' | 'direct';
  /** The bot runs as root: the jail gets its own uid (and the workspace is handed to it). */
  private readonly root: boolean;
  readonly bwrap: string;
  readonly setpriv: string;
  readonly mount: string;
  readonly envProgram: string;
  readonly unshare: string;
  readonly limits: JailLimits;
  readonly features: BwrapFeatures;
  readonly cgroups: CgroupSupport;
  readonly toolchain: Toolchain;
  private readonly capture: CaptureLimits;
  private readonly etc = new JailEtc();
  private readonly warm: ResidentJails;
  /** Why resident jails were turned off (their first command failed where a cold jail ran it). */
  private residentOff: string | undefined;
  /** Cleanups of ended jails still under way. */
  private readonly pending = new Set<Promise<unknown>>();
  /** What the last handovers of recent workspaces saw: only what changed since is looked at. */
  private readonly handovers = new Map<string, HandoverMemo>();
  /**
   * Workspaces a package store was lent to: their files may be hard links into the store, whose
   * owner another goal's handover changes without touching this tree's folders. Always handed over whole.
   */
  private readonly sharedInodes = new Set<string>();

  constructor(private readonly opts: BwrapSandboxOptions = {}) {
    const bwrap = findProgram(opts.bwrapPath ?? 'bwrap');
    if (!bwrap) throw new SandboxUnavailableError(`bubblewrap not found${opts.bwrapPath ? ` at ${opts.bwrapPath}` : ' on PATH'}`);
    this.bwrap = bwrap;
    this.root = process.getuid?.() === 0;
    this.mode = this.root ? (opts.jailMode ?? 'nested') : 'direct';
    this.setpriv = systemProgram(opts.setprivPath ?? 'setpriv', 'util-linux', `${this.root ? 'to start the jail as a non-root uid, and ' : ''}to drop the capabilities its /dev/pts mount needed`);
    this.mount = systemProgram('mount', 'util-linux', 'to mount its capped /dev/pts');
    this.envProgram = systemProgram('env', 'coreutils', 'to give the command its environment');
    this.unshare = systemProgram('unshare', 'util-linux', 'to give each command of a resident jail its own namespaces');
    this.features = bwrapFeatures(bwrap, opts.env ?? process.env, opts.logger);
    this.limits = { ...DEFAULT_JAIL_LIMITS, ...opts.limits };
    this.cgroups = opts.cgroups === 'off' ? { available: false, reason: 'cgroups turned off', parents: {} } : detectCgroups();
    this.toolchain = opts.toolchain ?? discoverToolchain();
    this.capture = opts.capture ?? DEFAULT_CAPTURE;
    this.warm = new ResidentJails({ idleMs: opts.warmIdleMs ?? 30_000, logger: opts.logger });
  }

  /** Resident jails started and ended, and commands that found theirs running (for tests and benchmarks). */
  get stats(): Readonly<ResidentJails['stats']> {
    return this.warm.stats;
  }

  /** Ends the resident jails; none is started from now on. */
  async dispose(): Promise<void> {
    await this.warm.dispose();
    await Promise.all(this.pending);
  }

  private later(cleanup: Promise<unknown>): void {
    const tracked: Promise<unknown> = cleanup.catch(() => undefined).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /** Ends the resident jails (e.g. for a workspace about to be removed). */
  async discardWarm(): Promise<void> {
    await this.warm.discardAll();
  }

  /** Gives the workspace to the jail uid: only the folders changed since its last handover are looked at. */
  private handOver(workspace: string, uid: number, gid: number): Promise<void> {
    if (this.sharedInodes.has(workspace)) return handOverWorkspace(workspace, uid, gid);
    const key = `${uid}:${gid}:${workspace}`;
    const memo = this.handovers.get(key) ?? new HandoverMemo({ uid, gid });
    // Most recent last; a bot with many goals keeps the memos of its last few workspaces only.
    this.handovers.delete(key);
    this.handovers.set(key, memo);
    if (this.handovers.size > MEMOS_KEPT) this.handovers.delete(this.handovers.keys().next().value!);
    return handOverWorkspace(workspace, uid, gid, 'workspace', memo);
  }

  /** The uid the jail of a workspace runs as (outside and inside the jail). */
  uidFor(workspace: string): number {
    if (!this.root) return process.getuid!();
    if (this.opts.uid !== undefined) return this.opts.uid;
    const base = this.opts.uidBase ?? DEFAULT_UID_BASE;
    const span = this.opts.uidSpan ?? DEFAULT_UID_SPAN;
    return base + (fnv1a(realOrUndefined(workspace) ?? workspace) % span);
  }

  /** One line about what is enforced, for the logs. */
  describe(): string {
    const memory = this.cgroups.available ? `memory ${mib(this.limits.memoryBytes)} via cgroup v${this.cgroups.version}` : `memory NOT limited (${this.cgroups.reason})`;
    return `bwrap ${this.mode} jail (${this.root ? 'a non-root uid per workspace' : `uid ${process.getuid?.()}`}), ${this.limits.maxProcesses} processes, files ≤ ${mib(this.limits.maxFileBytes)}, ${memory}`;
  }

  // Spawned by hand (runCaptured, wrapSpawned), not with execa: the jail's launcher gets the
  // FIFO's write end as its stdout and stderr, runs as the leader of a process group killed as a
  // group, and its environment is LAUNCH_ENV exactly; see run-captured.ts.
  //
  // A request of the kind that comes again (no network, no package store: run steps and
  // verifications) runs in the workspace's resident jail, started now when there is none; a
  // command the resident jail could not start runs in a cold jail of its own.
  async run(req: CommandRequest): Promise<CommandResult> {
    const resident = this.residentFor(req);
    if (resident) {
      const taken = await this.warm.take(resident.workspace, resident.key);
      const jail = taken ?? (await this.startResident(req, resident.workspace));
      // A jail that could not run it (no FIFO, no descriptor left, no handover) is ended; the cold jail reports its own failure.
      const result =
        jail &&
        (await this.runResident(jail, req).catch((err: unknown) => {
          this.opts.logger?.debug({ err, workspace: resident.workspace }, 'a resident jail could not run a command: running it cold');
          return undefined;
        }));
      if (result) {
        if (taken) this.warm.stats.warmHits++;
        if (result.timedOut || result.aborted || result.stalled) {
          // The command ended the jail with it: the next command's starts now, in the background.
          await this.warm.end(jail);
          this.warm.prewarm(resident.workspace, () => this.openResident(req, resident.workspace));
        } else await this.warm.giveBack(jail);
        return result;
      }
      if (jail) await this.warm.end(jail);
      if (jail && !taken) {
        const cold = await this.runCold(req);
        this.residentFailed(jail.diagnostics());
        return cold;
      }
    } else {
      // Setup's jail runs alone: a resident jail of its uid would count toward its process limit.
      const workspace = realOrUndefined(req.cwd);
      if (workspace) await this.warm.discard(workspace);
    }
    return this.runCold(req);
  }

  /**
   * A resident jail that was just started could not run its first command: they do not work here
   * (bash before 5.1, a process limit too low for its cells…). Every command runs in a jail of its
   * own from now on, and the operator is told once.
   */
  private residentFailed(why: string): void {
    if (this.residentOff) return;
    this.residentOff = why || 'the jail printed nothing';
    this.opts.logger?.warn({ reason: this.residentOff }, 'resident jails do not work here: every command runs in a jail of its own (slower)');
  }

  private async runCold(req: CommandRequest): Promise<CommandResult> {
    const jail = await this.openJail(req, true, req.passEnv);
    try {
      const capture = new StartFilter(new OutputCapture(this.capture, req.logPath));
      const result = await runCaptured((output) => spawn(this.toolchain.bash, jail.launcherArgs, { cwd: '/', env: LAUNCH_ENV, detached: true, stdio: ['ignore', output, output] }), capture, req);
      if (!capture.started && !result.aborted) {
        const why = explainJailFailure(result.output);
        throw new SandboxUnavailableError(
          `the bwrap jail did not start (exit ${result.exitCode ?? result.signal ?? '?'}): ${result.output.trim() || '(no output)'}${why ? `\n${why.reason}. Fix: ${why.fix}` : ''}`,
        );
      }
      this.noteOom(result, 0, jail.cgroup);
      return result;
    } finally {
      await jail.close();
    }
  }

  /**
   * Runs the command in a cell of the resident jail: the workspace handed over now (the bot's git
   * wrote files meanwhile), then the request to the server, the limits counted from then.
   * Undefined when the command never started (no start marker), and throws when the jail could not
   * run it: the caller ends the jail and runs it cold. A command that timed out, stalled or was aborted ended the jail with it.
   */
  private async runResident(jail: ResidentJail, req: CommandRequest): Promise<CommandResult | undefined> {
    if (this.root) await this.handOver(jail.parts.workspace, jail.parts.uid, jail.parts.gid);
    const capture = new StartFilter(new OutputCapture(this.capture, req.logPath));
    const oomBefore = jail.parts.cgroup?.oomKills() ?? 0;
    const cpu = launchLimits(this.limits, req.timeoutMs).find((l) => l.flag === '-t')!;
    const env = this.commandEnv(req, req.passEnv);
    const result = await jail.run({ request: (out) => residentRequest(out, { soft: limitText(cpu.soft), hard: limitText(cpu.hard) }, req.command, env) }, capture, req);
    if (!capture.started && !result.aborted) {
      this.opts.logger?.debug({ output: result.output, exitCode: result.exitCode, signal: result.signal, jail: jail.diagnostics() }, 'a resident jail did not start a command: running it cold');
      return undefined;
    }
    this.noteOom(result, oomBefore, jail.parts.cgroup);
    return result;
  }

  /** `before`: the cgroup's OOM kills before the command (a resident jail's cgroup outlives it). */
  private noteOom(result: CommandResult, before: number, cgroup: CommandCgroup | undefined): void {
    if (cgroup && cgroup.oomKills() > before) {
      result.output += `\n[goal-loop: a process was killed by the sandbox memory limit (${mib(this.limits.memoryBytes)})]`;
    }
  }

  /** The workspace and the key of a request that may run in a resident jail, or undefined. */
  private residentFor(req: CommandRequest): { workspace: string; key: string } | undefined {
    // An aborted request runs cold: in a resident jail its stop would end a healthy jail.
    if (this.opts.warm === false || this.residentOff || this.warm.closed || req.network === true || req.packageStore || req.signal?.aborted) return undefined;
    const passEnv = req.passEnv ?? {};
    const env = this.commandEnv(req, passEnv);
    const size = residentRequest('out-0', { soft: 'unlimited', hard: 'unlimited' }, req.command, env).length;
    if (size > RESIDENT_REQUEST_BYTES || req.command.includes('\0') || Object.entries(env).some(([k, v]) => k.includes('\0') || v.includes('\0'))) return undefined;
    let workspace: string;
    try {
      workspace = checkWorkspace(req.cwd);
    } catch {
      return undefined; // the cold path reports it
    }
    return { workspace, key: this.residentKey(workspace, passEnv) };
  }

  private residentKey(workspace: string, passEnv: Record<string, string>): string {
    const sorted = Object.entries(passEnv).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return JSON.stringify([workspace, this.uidFor(workspace), sorted]);
  }

  /** A resident jail for the workspace (undefined when none may start now: the caller runs cold). */
  private async startResident(req: CommandRequest, workspace: string): Promise<ResidentJail | undefined> {
    if (!this.warm.started()) return undefined;
    try {
      return await this.openResident(req, workspace);
    } catch (err) {
      this.opts.logger?.debug({ err, workspace }, 'cannot start a resident jail: running the command cold');
      return undefined;
    }
  }

  /** Starts a resident jail for the workspace of `req`, with its passed variables; throws when it cannot. */
  private async openResident(req: CommandRequest, workspace: string): Promise<ResidentJail> {
    const passEnv = req.passEnv ?? {};
    const tree = treeIdentity(workspace);
    if (!tree) throw new Error(`${workspace} is gone`);
    const channel = scratchPath('jail');
    mkdirSync(channel, { mode: 0o700 });
    let jail: Awaited<ReturnType<BwrapSandbox['openJail']>> | undefined;
    let input: { read: number; write: number } | undefined;
    try {
      // Read by the cells (the jail uid) through the read-only bind: traversable, not listable.
      chmodSync(channel, 0o711);
      // The jail's uid must reach the workspace to start in it (bwrap's --chdir).
      if (this.root) await this.handOver(workspace, this.uidFor(workspace), this.uidFor(workspace));
      jail = await this.openJail({ command: '', cwd: workspace, timeoutMs: req.timeoutMs }, true, passEnv, false, channel);
      input = openInputChannel();
      const launcherArgs = jail.launcherArgs;
      const stdin = input.read;
      const launcher = spawn(this.toolchain.bash, launcherArgs, { cwd: '/', env: LAUNCH_ENV, detached: true, stdio: [stdin, 'pipe', 'pipe'] });
      closeQuietly(input.read);
      const opened = jail;
      return new ResidentJail({
        key: this.residentKey(opened.workspace, passEnv),
        workspace: opened.workspace,
        tree,
        uid: opened.uid,
        gid: opened.gid,
        fifoOwner: this.root ? { uid: opened.uid, gid: opened.gid } : undefined,
        launcher,
        input: input.write,
        channel,
        cgroup: opened.cgroup,
        close: async () => {
          await opened.close();
          rmSync(channel, { recursive: true, force: true });
        },
      });
    } catch (err) {
      if (input) for (const fd of [input.read, input.write]) closeQuietly(fd);
      await jail?.close();
      rmSync(channel, { recursive: true, force: true });
      throw err;
    }
  }

  /** A long-lived jailed process (an MCP server): stdin and stdout piped, stderr kept apart. */
  async spawn(req: SpawnRequest): Promise<SandboxProcess> {
    // Read-only: it runs while the bot's git and file tools work on the same tree.
    const jail = await this.openJail({ command: shellLine(req.program, req.args), cwd: req.cwd, env: req.env, timeoutMs: req.lifetimeMs }, false, req.passEnv, true);
    try {
      const child = spawn(this.toolchain.bash, jail.launcherArgs, { cwd: '/', env: LAUNCH_ENV, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
      return wrapSpawned(child, { stripStartMarker: true, lifetimeMs: req.lifetimeMs, ...(req.logPath ? { logPath: req.logPath } : {}), cleanup: () => jail.close() });
    } catch (err) {
      await jail.close();
      throw err;
    }
  }

  /**
   * Everything one jailed command needs: the workspace handed to the jail uid, the generated
   * /etc, a cgroup, and the launcher's argv. `merge` sends stderr into stdout (captured runs).
   * `close` waits for every process of the jail to be gone and removes what was made.
   */
  private async openJail(
    req: Pick<CommandRequest, 'command' | 'cwd' | 'env' | 'network' | 'timeoutMs' | 'packageStore'>,
    merge: boolean,
    passEnv: Record<string, string> = {},
    workspaceReadOnly = false,
    channel?: string,
  ): Promise<{ launcherArgs: string[]; cgroup: CommandCgroup | undefined; close: () => Promise<void>; workspace: string; uid: number; gid: number }> {
    const workspace = checkWorkspace(req.cwd);
    const uid = this.uidFor(workspace);
    const gid = this.root ? uid : process.getgid!();
    const gitPath = join(workspace, '.git');
    const git = lstatOrUndefined(gitPath);
    if (git?.isSymbolicLink()) throw new SandboxUnavailableError(`refusing to run in ${workspace}: its .git is a symlink`);
    const store = req.packageStore ? checkPackageStore(req.packageStore.dir, workspace) : undefined;
    if (store) this.sharedInodes.add(workspace);
    // The handover runs (a `find`) while the rest is prepared; nothing jailed starts before it ends.
    // A resident jail's server is no jailed command: the handover is at each command (runResident).
    const handover = this.root && !channel ? Promise.all([this.handOver(workspace, uid, gid), ...(store ? [handOverWorkspace(store, uid, gid, 'package store')] : [])]) : undefined;
    handover?.catch(() => undefined); // awaited below; not unhandled if the preparation fails first
    let etc: EtcFiles | undefined;
    let cgroup: CommandCgroup | undefined;
    const close = async () => {
      await awaitGone({ uid, cgroup, perWorkspaceUid: this.root && this.opts.uid === undefined, waiting: this.warm.waitingRoots(), logger: this.opts.logger });
      // Nothing of the command is left: the housekeeping goes off the caller's path (dispose waits for it).
      this.later(Promise.all([cgroup?.remove().catch((err: unknown) => this.opts.logger?.warn({ err }, 'cannot remove the command cgroup')), etc?.release()]));
    };
    try {
      etc = await this.etc.acquire(uid, gid, req.network === true, passEnv);
      const { files, emptyFile } = etc;
      const spec: JailSpec = {
        mode: this.mode,
        dropToUid: this.root,
        bwrap: this.bwrap,
        setpriv: this.setpriv,
        mount: this.mount,
        envProgram: this.envProgram,
        maxPtys: this.limits.maxPtys,
        bash: this.toolchain.bash,
        uid,
        gid,
        toolchain: this.toolchain,
        files,
        emptyFile,
        workspace,
        workspaceReadOnly,
        ...(store ? { writableDirs: [store] } : {}),
        hasGitDir: git !== undefined,
        home: JAIL_HOME,
        env: this.commandEnv(req, passEnv),
        network: req.network === true,
        features: this.features,
        tmpBytes: this.limits.tmpBytes,
        homeBytes: this.limits.homeBytes,
        command: req.command,
      };
      if (channel) {
        const keep = keptByKind(cellKeptBinds({ workspace, toolchain: this.toolchain, home: JAIL_HOME }));
        spec.resident = { channel, unshare: this.unshare, keep };
        const table = cellMountTable({ home: JAIL_HOME, tmpBytes: this.limits.tmpBytes, homeBytes: this.limits.homeBytes, features: this.features, binds: keep.dirs });
        writeFileSync(join(channel, 'fstab'), table, { mode: 0o644 });
      }
      const argv = jailArgv(spec);
      if (this.cgroups.available) {
        cgroup = createCommandCgroup(this.cgroups, { memoryBytes: this.limits.memoryBytes, maxProcesses: this.limits.maxProcesses + 16 });
      }
      // A resident jail's server lives across commands: each cell sets its command's CPU limit (a configured one too).
      const limits = channel ? launchLimits({ ...this.limits, cpuSeconds: Number.POSITIVE_INFINITY }, Number.POSITIVE_INFINITY) : launchLimits(this.limits, req.timeoutMs);
      const launcherArgs = [
        // With a socket on stdin (an MCP server's pipes) bash would read the bot's ~/.bashrc.
        '--norc',
        '--noprofile',
        '-c',
        LAUNCHER,
        'goal-loop-launch',
        ...limits.flatMap((l) => [limitText(l.soft), limitText(l.hard)]),
        merge ? '1' : '0',
        String(cgroup?.procsFiles.length ?? 0),
        ...(cgroup?.procsFiles ?? []),
        ...argv,
      ];
      await handover;
      return { launcherArgs, cgroup, close, workspace, uid, gid };
    } catch (err) {
      await handover?.catch(() => undefined);
      await close();
      throw err;
    }
  }

  /** The command's whole environment. */
  private commandEnv(req: Pick<CommandRequest, 'env' | 'packageStore'>, passEnv: Record<string, string> = {}): Record<string, string> {
    return { ...passEnv, ...req.packageStore?.env, ...sandboxEnvironment({ path: this.toolchain.path, home: JAIL_HOME, extra: req.env }) };
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* closed already */
  }
}

/** The kept binds of a resident jail's cells by kind (what the jail binds there is the bot's own: the workspace, the toolchain). */
function keptByKind(paths: readonly string[]): KeptBinds {
  const dirs: string[] = [];
  const files: string[] = [];
  for (const p of paths) (statSync(p).isDirectory() ? dirs : files).push(p);
  return { dirs, files };
}
