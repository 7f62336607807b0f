import type { BaselinePolicy } from '../goal/evidence.js';
import type { LoopLimits } from '../goal/limits.js';
import { effectiveRisk } from '../goal/limits.js';
import type { GoalSpec } from '../goal/schema.js';
import type { Usage } from '../goal/usage.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import { initialState, type LoopState, type OnEscalation } from './transition.js';

export interface InitialLoopStateInput {
  spec: GoalSpec;
  branch: string;
  priority?: string;
  /** Task ids a human approved for this run (`all` approves every task). */
  approve?: string[];
  limits: LoopLimits;
  onEscalation?: OnEscalation;
  baselinePolicy?: BaselinePolicy;
  startedAtMs: number;
}

/**
 * Records the goal (or refreshes its spec) and the approvals given for this run, then builds the
 * loop's first state from the spec and what the ledger knows: counters, attempts, approvals and
 * skipped tasks carry over from earlier runs. What is done is for git to say (the `start` event).
 */
export async function initialLoopState(ledger: GoalLedger, key: GoalKey, input: InitialLoopStateInput): Promise<{ state: LoopState; tokens: Usage }> {
  const { spec, limits } = input;
  await ledger.upsertGoal(key, { spec, branch: input.branch, ...(input.priority ? { priority: input.priority } : {}) });
  if (input.approve?.length) {
    for (const t of spec.tasks) if (input.approve.includes('all') || input.approve.includes(t.id)) await ledger.updateTask(key, t.id, { approved: true });
  }
  const goal = (await ledger.getGoal(key))!;
  const records = new Map((await ledger.listTasks(key)).map((r) => [r.taskId, r]));
  const state = initialState({
    limits,
    ...(input.onEscalation ? { onEscalation: input.onEscalation } : {}),
    ...(input.baselinePolicy ? { baselinePolicy: input.baselinePolicy } : {}),
    startedAtMs: input.startedAtMs,
    counters: { iterations: goal.counters.iterations, errors: goal.counters.errors, errorsRecovered: goal.counters.errors_recovered, costUsd: goal.counters.cost_usd },
    tasks: spec.tasks.map((t) => {
      const rec = records.get(t.id);
      return {
        id: t.id,
        title: t.title,
        dependencies: t.dependencies,
        risk: effectiveRisk(t),
        requiresApproval: t.requires_approval,
        approved: rec?.approved ?? false,
        maxRetries: t.max_retries ?? limits.max_retries,
        status: rec?.status === 'skipped' ? 'skipped' : 'pending',
        attempts: rec?.attempts ?? 0,
        ...(t.expect ? { expect: t.expect } : {}),
      };
    }),
  });
  return { state, tokens: goal.counters.tokens };
}
