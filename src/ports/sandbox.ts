/** Runs untrusted commands (setup, run steps, verification, the agent's run_command). */
export interface Sandbox {
  /** Human-readable name of the isolation in force, e.g. `bwrap` or `process`. */
  readonly kind: string;
  run(request: CommandRequest): Promise<CommandResult>;
}

export interface CommandRequest {
  /** A shell command line, run with `bash -c`. */
  command: string;
  /** The workspace; the only writable place. */
  cwd: string;
  /** Extra variables; the sandbox starts from a cleared environment. */
  env?: Record<string, string>;
  timeoutMs: number;
  /** Network access; only ever true for the repo's `setup` step when config allows it. */
  network?: boolean;
  /** Full output is written here (bounded); the result keeps only a head and a tail. */
  logPath?: string;
  signal?: AbortSignal;
}

export interface CommandResult {
  /** Exit status; null when killed by a signal or a timeout. */
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
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
