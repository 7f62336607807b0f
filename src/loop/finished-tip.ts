import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { GoalSpec } from '../goal/schema.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { Workspace } from '../ports/workspace.js';
import type { TaskView } from './loop-model.js';

/**
 * A rerun of a finished goal on the same branch tip does no work: no setup, no final gate. The
 * final gate's pass is remembered in the goal's meta with the commit it passed on and what it
 * checked (the acceptance checks and the repo's gate commands); any new commit on the branch, or
 * another check, runs it again.
 */
const GatePassedSchema = z.object({ sha: z.string(), checks: z.string() });

/** What the final gate checks, as a key: another criterion or gate command is another gate. */
export function gateChecksKey(spec: Pick<GoalSpec, 'acceptance_criteria'>, gate: readonly string[]): string {
  const checks = spec.acceptance_criteria.flatMap((c) => (c.check ? [c.check] : []));
  return createHash('sha256').update(JSON.stringify({ checks, gate })).digest('hex');
}

/** Remembers that the final gate passed on the workspace's current commit. */
export async function rememberGatePassed(ledger: Pick<GoalLedger, 'setMeta'>, key: GoalKey, workspace: Pick<Workspace, 'head'>, checks: string): Promise<void> {
  await ledger.setMeta(key, { gatePassed: { sha: await workspace.head(), checks } });
}

/**
 * True when every task is settled by the branch (a checkpoint, or skipped) and the final gate
 * already passed on the branch's tip with the same checks.
 */
export async function finishedAtTip(
  ledger: Pick<GoalLedger, 'getGoal'>,
  key: GoalKey,
  tasks: readonly Pick<TaskView, 'id' | 'status'>[],
  checkpoints: ReadonlyArray<{ taskId: string }>,
  workspace: Pick<Workspace, 'head'>,
  checks: string,
): Promise<boolean> {
  const done = new Set(checkpoints.map((c) => c.taskId));
  if (!tasks.every((t) => t.status === 'skipped' || done.has(t.id))) return false;
  const passed = GatePassedSchema.safeParse((await ledger.getGoal(key))?.meta.gatePassed);
  if (!passed.success || passed.data.checks !== checks) return false;
  return passed.data.sha === (await workspace.head());
}
