import type { GoalSnapshot, LoopResult, SetupProgress } from '../goal/result.js';
import type { GoalSpec } from '../goal/schema.js';
import type { Usage } from '../goal/usage.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { LoopState } from './transition.js';

/** When each task's attempts in this run began and ended (for the forge's elapsed times). */
export type TaskTimes = Map<string, { startedAt?: number; endedAt?: number }>;

/**
 * The run as it stands: the loop's state, the tokens the ledger has counted, and the task times.
 * What the forge is shown (`snapshot`) and what the run returns (`result`) are both read from here.
 */
export class RunView {
  readonly taskTimes: TaskTimes = new Map();
  /** This run's setup, as it goes (shown before the first task). */
  setup: SetupProgress | undefined;
  /** Checkpoints not pushed yet: shown done, without a commit people could not find yet. */
  unpushed: ReadonlySet<string> = new Set();

  constructor(
    private readonly key: GoalKey,
    private readonly spec: GoalSpec,
    private readonly branch: string,
    private readonly startedAt: number,
    private readonly clock: () => number,
    public state: LoopState,
    public tokens: Usage,
  ) {}

  snapshot(): GoalSnapshot {
    const { state } = this;
    return {
      goalId: this.key.goalId,
      objective: this.spec.objective,
      repo: this.key.repo,
      branch: this.branch,
      state: state.phase,
      ...(state.stopReason ? { stopReason: state.stopReason } : {}),
      ...(state.currentTaskId ? { currentTaskId: state.currentTaskId } : {}),
      tasks: state.tasks.map((t) => ({
        id: t.id,
        title: t.title,
        dependencies: t.dependencies,
        status: t.status,
        attempts: t.attempts,
        ...(t.checkpointSha && !this.unpushed.has(t.checkpointSha) ? { checkpointSha: t.checkpointSha } : {}),
        ...(t.lastError ? { lastError: t.lastError } : {}),
        // Passed before the task ran, and not a refactor's: its verification proves nothing (warn).
        ...(t.baseline === 'green' && t.expect !== 'green' ? { passedBefore: true } : {}),
        ...this.taskTimes.get(t.id),
      })),
      iterations: state.counters.iterations,
      tokens: this.tokens,
      costUsd: state.counters.costUsd,
      limits: state.limits,
      startedAt: state.startedAtMs,
      ...(state.escalation ? { escalation: state.escalation } : {}),
      ...(this.setup ? { setup: { ...this.setup } } : {}),
      ...(state.followedBase ? { followedBase: state.followedBase } : {}),
    };
  }

  /** The run's result as the ledger knows it now (counters included). */
  async result(ledger: Pick<GoalLedger, 'getGoal'>): Promise<LoopResult> {
    const goal = await ledger.getGoal(this.key);
    return this.resultWith(goal?.counters.tokens, goal?.counters.cost_usd);
  }

  /** The result from what this process knows, when the ledger cannot be read. */
  fallbackResult(): LoopResult {
    return this.resultWith(undefined, undefined);
  }

  private resultWith(tokens: Usage | undefined, costUsd: number | undefined): LoopResult {
    const { state } = this;
    const done = state.tasks.filter((t) => t.status === 'done' || t.status === 'skipped');
    return {
      goal_id: this.key.goalId,
      status: state.phase,
      success: state.phase === 'LOOP_COMPLETE',
      tasks_completed: done.length,
      tasks_total: state.tasks.length,
      iterations: state.counters.iterations,
      errors_recovered: state.counters.errorsRecovered,
      tokens: tokens ?? { input: 0, output: 0, cache_read: 0, cache_write: 0 },
      cost_usd: round(costUsd ?? state.counters.costUsd, 6),
      duration_s: round((this.clock() - this.startedAt) / 1000, 3),
      stop_reason: state.stopReason ?? null,
      branch: this.branch,
      checkpoints: state.tasks
        .filter((t) => t.checkpointSha)
        .sort((a, b) => (a.checkpointSeq ?? 0) - (b.checkpointSeq ?? 0))
        .map((t) => ({ task_id: t.id, sha: t.checkpointSha! })),
      ...(state.escalation ? { escalation: state.escalation } : {}),
    };
  }
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
