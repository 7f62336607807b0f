import { InputError, UsageError } from '../common/errors.js';
import { RepoConfigError } from '../config/repo-config.js';
import { formatSpecError, SpecValidationError } from '../goal/parse.js';
import { EXIT } from '../goal/result.js';
import { LedgerOpenError } from '../ports/ledger.js';
import { SandboxUnavailableError } from '../ports/sandbox.js';
import { LockedError } from '../run/lock.js';

/**
 * A command's error as the person at the terminal sees it: one line (or the spec's list) on
 * stderr and the exit code; `hint` says where the command's help is. Anything unexpected is an
 * internal error, with its stack.
 */
export function exitForError(err: unknown, hint: string): number {
  if (err instanceof SpecValidationError) {
    const [only] = err.errors;
    if (err.errors.length === 1 && only) process.stderr.write(`goal-loop: invalid goal spec ${err.source}: ${formatSpecError(only)}\n`);
    else process.stderr.write(`goal-loop: invalid goal spec ${err.source}\n${err.errors.map((e) => `  ${formatSpecError(e)}`).join('\n')}\n`);
    return EXIT.badInput;
  }
  if (err instanceof UsageError) {
    process.stderr.write(`goal-loop: ${err.message.replace(/^goal-loop /, '')} ${hint}\n`);
    return EXIT.badInput;
  }
  // Refused input, a ledger that would not open, no jail here, another run on the workspace: its message says it all.
  const oneLine = [RepoConfigError, InputError, LedgerOpenError, SandboxUnavailableError, LockedError];
  if (oneLine.some((kind) => err instanceof kind)) {
    process.stderr.write(`goal-loop: ${(err as Error).message}\n`);
    return EXIT.badInput;
  }
  process.stderr.write(`goal-loop: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return EXIT.internal;
}
