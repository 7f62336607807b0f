import type { CommandRequest, CommandResult } from '../ports/sandbox.js';
import type { Capture } from './run-captured.js';
import { StallWatch } from './stall-watch.js';

/**
 * The timeout, the stall watch and the stop (abort signal) of one command, from now: each ends the
 * command with `kill`, and which one did is remembered for its result. `stop` when it ended.
 */
export class CommandLimits {
  timedOut = false;
  stalled = false;
  aborted = false;
  private readonly timer: NodeJS.Timeout;
  private readonly watch: StallWatch | undefined;
  private readonly onAbort: () => void;

  constructor(
    private readonly req: Pick<CommandRequest, 'timeoutMs' | 'signal' | 'stallMs' | 'cwd'>,
    pid: number | undefined,
    kill: () => void,
  ) {
    this.timer = setTimeout(() => {
      this.timedOut = true;
      kill();
    }, req.timeoutMs);
    if (req.stallMs !== undefined && pid !== undefined) {
      this.watch = new StallWatch({
        pid,
        workspace: req.cwd,
        stallMs: req.stallMs,
        onStall: () => {
          this.stalled = true;
          kill();
        },
      });
    }
    this.onAbort = () => {
      this.aborted = true;
      kill();
    };
    if (req.signal?.aborted) this.onAbort();
    req.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** One of the limits ended the command. */
  get killed(): boolean {
    return this.timedOut || this.stalled || this.aborted;
  }

  /** Output arrived: the command is alive. */
  output(): void {
    this.watch?.output();
  }

  /** The command ended: no limit acts from now. */
  stop(): void {
    clearTimeout(this.timer);
    this.watch?.stop();
    this.req.signal?.removeEventListener('abort', this.onAbort);
  }
}

/** A command's result: its exit (none when a limit ended it) and what `capture` kept. */
export function commandResult(limits: CommandLimits, capture: Capture, exit: { code: number | null; signal: string | null }, startedMs: number): CommandResult {
  return {
    exitCode: limits.killed ? null : exit.code,
    signal: exit.signal,
    timedOut: limits.timedOut,
    ...(limits.stalled ? { stalled: true } : {}),
    aborted: limits.aborted,
    output: capture.text(),
    outputBytes: capture.bytes,
    truncated: capture.truncated,
    durationMs: Date.now() - startedMs,
    ...(capture.logPath ? { logPath: capture.logPath } : {}),
  };
}
