import type { CommandResult } from '../ports/sandbox.js';

// How a command's result is told: in a failure people and the next attempt read, and in the ledger.

/** What failed and how, its output, and last (so every tail-excerpt keeps it) a hint, if any. */
export function describeFailure(what: string, result: CommandResult, timeoutS: number, hint?: string, stallS?: number): string {
  const status = result.stalled
    ? `stalled (no output, no file written and no CPU used for ${stallS ?? '?'}s) and was killed`
    : result.timedOut
      ? `timed out after ${timeoutS}s and was killed`
      : result.exitCode === null
        ? `was killed by ${result.signal ?? 'a signal'}`
        : `exited with code ${result.exitCode}`;
  const out = result.output.trim();
  return `${what} ${status}${out ? `:\n${out}` : ' (no output)'}${hint ? `\n\n${hint}` : ''}`;
}

/** The ledger's attempt row for one command of a task. */
export function attemptRecord(taskId: string, attempt: number, phase: string, r: CommandResult, output: string, passed = false) {
  return { taskId, attempt, phase, passed, exitCode: r.exitCode, output, ...(r.logPath ? { logPath: r.logPath } : {}), durationMs: r.durationMs };
}

/** An error's message, whatever was thrown. */
export function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
