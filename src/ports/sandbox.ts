/** Runs untrusted commands (setup, run steps, verification, the agent's run_command). */
export interface Sandbox {
  /** Human-readable name of the isolation in force, e.g. `bwrap` or `process`. */
  readonly kind: string;
  run(request: CommandRequest): Promise<CommandResult>;
  /** Ends what the sandbox keeps between commands (jails started ahead); its owner calls it when done. */
  dispose?(): Promise<void>;
}

export interface CommandRequest {
  /** A shell command line, run with `bash -c`. */
  command: string;
  /** The workspace; the only writable place. */
  cwd: string;
  /** Extra variables; the sandbox starts from a cleared environment. */
  env?: Record<string, string>;
  timeoutMs: number;
  /**
   * Kill the command as stalled once, for this long, no output byte arrived, no file in the
   * workspace changed and its processes used no CPU and moved no data (the setup step: a silent
   * network retry loop).
   */
  stallMs?: number;
  /** Network access; only ever true for the repo's `setup` step when config allows it. */
  network?: boolean;
  /**
   * Host variables the repo config names for this command (`setup_env`; the caller filters out
   * the bot's own credentials). A CA bundle one of them names is bound read-only.
   */
  passEnv?: Record<string, string>;
  /**
   * The repository's package store, for setup only: a folder goal-loop made (absolute, real, no
   * link on the way, apart from the workspace), bound read-write at the same path, and the
   * variables that point the package managers at it.
   */
  packageStore?: { dir: string; env: Record<string, string> };
  /** Full output is written here (bounded); the result keeps only a head and a tail. */
  logPath?: string;
  signal?: AbortSignal;
}

export interface CommandResult {
  /** Exit status; null when killed by a signal or a timeout. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Killed by `stallMs`: no output, no file written, no CPU used for that long. */
  stalled?: boolean;
  aborted: boolean;
  /** Interleaved stdout and stderr, capped: head and tail, with a marker where bytes were cut. */
  output: string;
  /** Bytes the command printed in total. */
  outputBytes: number;
  truncated: boolean;
  durationMs: number;
  logPath?: string;
}

/** The sandbox itself could not run the command: an infrastructure error, not a task failure. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}

/**
 * A long-lived process in the sandbox (an MCP server for the agent), talking over stdin and
 * stdout. Same isolation as `run` (cleared environment), but the workspace is read-only: the
 * process lives beside the bot's own git and file tools, which must never race a writer.
 */
export interface SpawnRequest {
  /** The program (looked up on the sandbox's PATH) and its arguments; no shell. */
  program: string;
  args: string[];
  /** The workspace; the process's working directory. */
  cwd: string;
  /** GOAL_* variables only, as for `run`. */
  env?: Record<string, string>;
  /**
   * Host variables the repo config names explicitly for this process (never the bot's own
   * credentials: the caller filters them). PATH and HOME stay the sandbox's.
   */
  passEnv?: Record<string, string>;
  /** The process is killed after this long (the goal's lifetime bound). */
  lifetimeMs: number;
  /** Its stderr goes here (bounded). */
  logPath?: string;
}

export interface SandboxProcess {
  readonly stdin: NodeJS.WritableStream;
  /** Only what the process itself wrote: the jail's start marker is removed. */
  readonly stdout: NodeJS.ReadableStream;
  /** Settles once the process and everything it started are gone. */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** The last few KiB of its stderr, for error messages. */
  stderrTail(): string;
  /** Kills the process and its whole jail. */
  kill(): void;
}

/** A sandbox that can also run long-lived processes. */
export interface SpawningSandbox extends Sandbox {
  spawn(request: SpawnRequest): Promise<SandboxProcess>;
}

export function canSpawn(sandbox: Sandbox): sandbox is SpawningSandbox {
  return typeof (sandbox as Partial<SpawningSandbox>).spawn === 'function';
}
