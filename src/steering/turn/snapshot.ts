import { effectiveLimits, type LoopLimits } from '../../goal/limits.js';
import type { GoalSnapshot } from '../../goal/result.js';
import type { LimitsOverride } from '../../goal/schema.js';
import type { GoalKey, GoalLedger, GoalRecord } from '../../ports/goal-ledger.js';
import { type GitHubGoal, readGitHubMeta } from '../goal-meta.js';

/** A maintainer's `/goal budget`: it may raise what the spec may only lower. */
export function humanLimits(goal: GoalRecord): LimitsOverride | undefined {
  const budgetUsd = readGitHubMeta(goal.meta).budgetUsd;
  return budgetUsd !== undefined ? { cost_cap_usd: budgetUsd } : undefined;
}

/** A snapshot from the ledger alone, for status comments outside a running loop. */
export async function snapshotFromLedger(ledger: Pick<GoalLedger, 'getGoal' | 'listTasks'>, key: GoalKey, g: GitHubGoal, configured: Partial<LoopLimits> = {}): Promise<GoalSnapshot> {
  const goal = (await ledger.getGoal(key))!;
  const tasks = await ledger.listTasks(key);
  const specTasks = new Map((goal.spec.tasks ?? []).map((t) => [t.id, t]));
  return {
    goalId: key.goalId,
    objective: goal.objective,
    repo: key.repo,
    branch: g.branch,
    state: goal.state,
    ...(goal.stopReason ? { stopReason: goal.stopReason } : {}),
    tasks: tasks.map((t) => ({
      id: t.taskId,
      title: t.title,
      dependencies: specTasks.get(t.taskId)?.dependencies ?? [],
      status: t.status,
      attempts: t.attempts,
      ...(t.checkpointSha ? { checkpointSha: t.checkpointSha } : {}),
    })),
    iterations: goal.counters.iterations,
    tokens: goal.counters.tokens,
    costUsd: goal.counters.cost_usd,
    limits: effectiveLimits(configured, goal.spec.limits, humanLimits(goal)),
    startedAt: Date.parse(goal.createdAt),
  };
}
