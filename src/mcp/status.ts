import type { TaskSnapshot } from '../goal/result.js';
import type { GoalLedger, TaskRecord } from '../ports/goal-ledger.js';
import { safeguardOf } from './limits-policy.js';
import type { Sessions } from './sessions.js';

/** `goal_status`: one goal in detail, or (with none open and no id) the ledger's goals. */
export async function goalStatus(
  sessions: Sessions,
  ledger: Pick<GoalLedger, 'listGoals'>,
  goalId: string | undefined,
  taskLine: (t: TaskRecord, live?: TaskSnapshot) => Record<string, unknown>,
): Promise<unknown> {
  if (goalId === undefined && sessions.list().length === 0) {
    const goals = await ledger.listGoals();
    return {
      goals: goals.map((g) => ({ goal_id: g.goalId, repo: g.repo, state: g.state, branch: g.branch, iterations: g.counters.iterations, cost_usd: g.counters.cost_usd, stop_reason: g.stopReason })),
    };
  }
  const session = sessions.find(goalId);
  const goal = await session.goal();
  const tasks = await session.tasks();
  const live = new Map((session.forge.latest?.tasks ?? []).map((t) => [t.id, t]));
  const pending = session.pending();
  return {
    goal_id: session.key.goalId,
    repo: session.key.repo,
    objective: session.spec.objective,
    state: goal?.state,
    running: session.running,
    ...(goal?.stopReason ? { stop_reason: goal.stopReason, safeguard: safeguardOf(goal.state, goal.stopReason) } : {}),
    ...(pending ? { current_task: { id: pending.input.task.id, attempt: pending.input.attempt } } : {}),
    branch: session.branch,
    workspace: session.workspaceDir,
    tasks: tasks.map((t) => taskLine(t, session.running ? live.get(t.taskId) : undefined)),
    counters: goal?.counters,
    limits: session.limits(),
    ...(session.lastResult ? { last_run: session.lastResult } : {}),
  };
}
