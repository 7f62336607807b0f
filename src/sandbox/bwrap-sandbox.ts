import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type CommandRequest, type CommandResult, type SandboxProcess, SandboxUnavailableError, type SpawningSandbox, type SpawnRequest } from '../ports/sandbox.js';
import { type BwrapFeatures, gateRequest, type JailSpec, jailArgv } from './bwrap-args.js';
import { type CgroupSupport, type CommandCgroup, createCommandCgroup, detectCgroups } from './cgroup.js';
import { sandboxEnvironment } from './environment.js';
import { type EtcFiles, JailEtc } from './jail-etc.js';
import { awaitGone, bwrapFeatures, checkPackageStore, checkWorkspace, fnv1a, JAIL_HOME, lstatOrUndefined, mib, realOrUndefined } from './jail-host.js';
import { LAUNCH_ENV, LAUNCHER, launchLimits, systemProgram } from './jail-launch.js';
import { explainJailFailure, StartFilter } from './jail-start.js';
import { type CaptureLimits, DEFAULT_CAPTURE, OutputCapture } from './output-capture.js';
import { CapturedChild, openInputChannel, runCaptured } from './run-captured.js';
import { shellLine, wrapSpawned } from './spawned-process.js';
import { discoverToolchain, findProgram, type Toolchain } from './toolchain.js';
import { sendRequest, treeIdentity, type WarmJail, WarmJails } from './warm-jail.js';
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
   * Start the jail of a workspace's next command ahead, once one ended (default true; see
   * warm-jail.ts). An unused one is discarded after `warmIdleMs` (default 30 s).
   */
  warm?: boolean;
  warmIdleMs?: number;
  /** Warm jails kept per workspace (default 2: a run step and its verification come back to back). */
  warmDepth?: number;
}

/** A request larger than this (command and variables) starts its jail cold. */
const WARM_REQUEST_BYTES = 64 * 1024;

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
 * - a jail of its own for every command, though the jail of a workspace's next command is
 *   started ahead, while the current one runs (warm-jail.ts): it waits in a trusted gate, and
 *   runs nothing until it is handed its command. `dispose()` ends the waiting ones.
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
  readonly limits: JailLimits;
  readonly features: BwrapFeatures;
  readonly cgroups: CgroupSupport;
  readonly toolchain: Toolchain;
  private readonly capture: CaptureLimits;
  private readonly etc = new JailEtc();
  private readonly warm: WarmJails;
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
    this.features = bwrapFeatures(bwrap, opts.env ?? process.env, opts.logger);
    this.limits = { ...DEFAULT_JAIL_LIMITS, ...opts.limits };
    this.cgroups = opts.cgroups === 'off' ? { available: false, reason: 'cgroups turned off', parents: {} } : detectCgroups();
    this.toolchain = opts.toolchain ?? discoverToolchain();
    this.capture = opts.capture ?? DEFAULT_CAPTURE;
    this.warm = new WarmJails({ idleMs: opts.warmIdleMs ?? 30_000, depth: opts.warmDepth ?? 2, logger: opts.logger });
  }

  /** How often a command found its jail already started (for tests and benchmarks). */
  get stats(): Readonly<WarmJails['stats']> {
    return this.warm.stats;
  }

  /** Kills the jails started ahead; none is started from now on. */
  async dispose(): Promise<void> {
    await this.warm.dispose();
    await Promise.all(this.pending);
  }

  private later(cleanup: Promise<unknown>): void {
    const tracked: Promise<unknown> = cleanup.catch(() => undefined).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  /** Kills the jails started ahead (e.g. for a workspace about to be removed). */
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
  // verifications) takes the workspace's warm jail when one matches, and leaves a warm jail for
  // the next one: each command still has a jail of its own, started for it alone.
  async run(req: CommandRequest): Promise<CommandResult> {
    const warm = this.warmable(req);
    if (warm) {
      const jail = await this.warm.take(warm.workspace, warm.key);
      const result = jail && (await this.runWarm(jail, req, () => this.prewarm(req, warm.workspace)));
      if (result) {
        this.warm.stats.warmHits++;
        this.prewarm(req, warm.workspace);
        return result;
      }
    } else {
      // A jail of the same uid waiting beside this one would hold up its end (awaitGone).
      const workspace = realOrUndefined(req.cwd);
      if (workspace) await this.warm.discard(workspace);
    }
    const result = await this.runCold(req, () => warm && this.prewarm(req, warm.workspace));
    if (warm) this.prewarm(req, warm.workspace);
    return result;
  }

  /** `started`: called once the command's jail is on its way (the next one may start then). */
  private async runCold(req: CommandRequest, started: () => void): Promise<CommandResult> {
    const jail = await this.openJail(req, true, req.passEnv);
    try {
      const capture = new StartFilter(new OutputCapture(this.capture, req.logPath));
      const running = runCaptured((output) => spawn(this.toolchain.bash, jail.launcherArgs, { cwd: '/', env: LAUNCH_ENV, detached: true, stdio: ['ignore', output, output] }), capture, req);
      started();
      const result = await running;
      if (!capture.started && !result.aborted) {
        const why = explainJailFailure(result.output);
        throw new SandboxUnavailableError(
          `the bwrap jail did not start (exit ${result.exitCode ?? result.signal ?? '?'}): ${result.output.trim() || '(no output)'}${why ? `\n${why.reason}. Fix: ${why.fix}` : ''}`,
        );
      }
      this.noteOom(result, jail.cgroup);
      return result;
    } finally {
      await jail.close();
    }
  }

  /**
   * Runs the command in a warm jail: the workspace handed over now (the bot's git wrote files
   * meanwhile), then the request to the gate, the limits counted from then. Undefined when the
   * jail never ran it (no start marker): the caller runs it cold.
   */
  private async runWarm(jail: WarmJail, req: CommandRequest, started: () => void): Promise<CommandResult | undefined> {
    let result: CommandResult;
    let capture: StartFilter;
    try {
      if (this.root) await this.handOver(jail.workspace, jail.uid, jail.gid);
      capture = new StartFilter(new OutputCapture(this.capture, req.logPath));
    } catch (err) {
      await this.warm.end(jail);
      throw err;
    }
    try {
      const running = jail.child.go(capture, req);
      sendRequest(jail.input, gateRequest(req.command, this.commandEnv(req, req.passEnv)));
      // The next command's jail starts while this one runs (it waits beside it, see awaitGone).
      started();
      result = await running;
      // Read before close() removes the cgroup.
      if (capture.started) this.noteOom(result, jail.cgroup);
    } finally {
      await jail.close();
    }
    if (!capture.started && !result.aborted) {
      this.opts.logger?.debug({ output: result.output }, 'a warm jail did not start: running the command cold');
      return undefined;
    }
    return result;
  }

  private noteOom(result: CommandResult, cgroup: CommandCgroup | undefined): void {
    if (cgroup?.oomKilled()) {
      result.output += `\n[goal-loop: a process was killed by the sandbox memory limit (${mib(this.limits.memoryBytes)})]`;
    }
  }

  /** The workspace and the key of a request that may use a warm jail, or undefined. */
  private warmable(req: CommandRequest): { workspace: string; key: string } | undefined {
    if (this.opts.warm === false || req.network === true || req.packageStore) return undefined;
    const passEnv = req.passEnv ?? {};
    const size = gateRequest(req.command, this.commandEnv(req, passEnv)).length;
    if (size > WARM_REQUEST_BYTES || req.command.includes('\0')) return undefined;
    let workspace: string;
    try {
      workspace = checkWorkspace(req.cwd);
    } catch {
      return undefined; // the cold path reports it
    }
    return { workspace, key: this.warmKey(workspace, req.timeoutMs, passEnv) };
  }

  private warmKey(workspace: string, timeoutMs: number, passEnv: Record<string, string>): string {
    const sorted = Object.entries(passEnv).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return JSON.stringify([workspace, this.uidFor(workspace), launchLimits(this.limits, timeoutMs), sorted]);
  }

  /** Starts the next command's jail in the background (see warm-jail.ts). */
  private prewarm(req: CommandRequest, workspace: string): void {
    this.warm.prewarm(workspace, async () => {
      const passEnv = req.passEnv ?? {};
      const tree = treeIdentity(workspace);
      if (!tree) throw new Error(`${workspace} is gone`);
      const jail = await this.openJail({ command: '', cwd: workspace, timeoutMs: req.timeoutMs }, true, passEnv, false, true);
      let input: { read: number; write: number } | undefined;
      try {
        input = openInputChannel();
        const stdin = input.read;
        const child = new CapturedChild((output) => spawn(this.toolchain.bash, jail.launcherArgs, { cwd: '/', env: LAUNCH_ENV, detached: true, stdio: [stdin, output, output] }));
        closeSync(input.read);
        this.warm.hold(child);
        child.unref();
        return {
          key: this.warmKey(jail.workspace, req.timeoutMs, passEnv),
          workspace: jail.workspace,
          tree,
          uid: jail.uid,
          gid: jail.gid,
          child,
          input: input.write,
          cgroup: jail.cgroup,
          close: jail.close,
        };
      } catch (err) {
        if (input) for (const fd of [input.read, input.write]) closeSync(fd);
        await jail.close();
        throw err;
      }
    });
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
    gate = false,
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
    // A warm jail's gate is no jailed command: its handover is at go (runWarm).
    const handover = this.root && !gate ? Promise.all([this.handOver(workspace, uid, gid), ...(store ? [handOverWorkspace(store, uid, gid, 'package store')] : [])]) : undefined;
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
        gate,
      };
      const argv = jailArgv(spec);
      if (this.cgroups.available) {
        cgroup = createCommandCgroup(this.cgroups, { memoryBytes: this.limits.memoryBytes, maxProcesses: this.limits.maxProcesses + 16 });
      }
      const limits = launchLimits(this.limits, req.timeoutMs);
      const launcherArgs = [
        // With a socket on stdin (an MCP server's pipes) bash would read the bot's ~/.bashrc.
        '--norc',
        '--noprofile',
        '-c',
        LAUNCHER,
        'goal-loop-launch',
        ...limits.flatMap((l) => [String(l.soft), String(l.hard)]),
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
