import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * An attempt that used up its model requests (max_turns) ends, and the verification decides. If
 * it fails, the next attempt must know why the last one stopped short: the loop's failure text
 * is the verification's output alone, so the agent leaves a note beside the attempt's logs
 * (outside the workspace, where no task writes) and leads the next attempt's failure with it.
 */

const TURN_LIMIT_FILE = 'turn-limit.json';

/** The attempt's result at the limit, and the words the next attempt's feedback starts with. */
export function turnLimitText(maxTurns: number): string {
  return `turn limit reached (${maxTurns} model requests)`;
}

/** Records in the attempt's log folder that it reached the limit (best effort). */
export async function markTurnLimit(attemptDir: string, maxTurns: number): Promise<void> {
  await writeFile(join(attemptDir, TURN_LIMIT_FILE), JSON.stringify({ maxTurns }), { mode: 0o600 }).catch(() => undefined);
}

/** The loop's failure text, led by the turn limit when attempt `attempt` (its logs in `attemptDir`) reached it. */
export async function withTurnLimitNote(failure: string | undefined, attemptDir: string, attempt: number): Promise<string | undefined> {
  if (failure === undefined || attempt < 1) return failure;
  let maxTurns: unknown;
  try {
    maxTurns = (JSON.parse(await readFile(join(attemptDir, TURN_LIMIT_FILE), 'utf8')) as { maxTurns?: unknown }).maxTurns;
  } catch {
    return failure; // no note: that attempt stopped on its own
  }
  if (typeof maxTurns !== 'number') return failure;
  return `Attempt ${attempt}: ${turnLimitText(maxTurns)} before it stopped calling tools. Work in fewer, larger steps. Why that attempt failed:\n\n${failure}`;
}
