import type { Logger } from 'pino';
import type { LoopLedger } from '../loop/controller.js';
import type { GoalKey, Leases, LedgerHousekeeping } from '../ports/ledger.js';
import type { GoalMode, WorkQueue } from '../ports/queue.js';
import { readGitHubGoal } from '../steering/issue-goal.js';
import { DEFAULT_LEASE_MS, WorkerPool } from '../worker/worker-pool.js';
import { settleGoalEffects } from './outbox-effects.js';
import { type WorkGoalDeps, workGoal } from './work-goal.js';

export interface GoalWorkersOptions extends Omit<WorkGoalDeps, 'ledger' | 'logger' | 'workerId' | 'effectClaimMs'> {
  /** What a goal's turn uses, and what the pool leases and prunes. */
  ledger: LoopLedger & Leases & LedgerHousekeeping;
  queue: WorkQueue;
  logger: Logger;
  concurrency: number;
  workerId?: string;
  leaseMs?: number;
  pollMs?: number;
}

/** Workers for GitHub goals: the durable queue's jobs, each one turn of `workGoal`. */
export function createGoalWorkers(opts: GoalWorkersOptions): WorkerPool {
  const { queue, concurrency, workerId, leaseMs, pollMs, ...deps } = opts;
  const claimMs = leaseMs ?? DEFAULT_LEASE_MS;
  const later = (key: GoalKey, mode: GoalMode, priority: string, delayMs: number) => queue.enqueue({ key, mode, priority }, delayMs > 0 ? { delayMs } : {});
  const pool: WorkerPool = new WorkerPool({
    ledger: opts.ledger,
    queue,
    logger: opts.logger,
    concurrency,
    ...(workerId ? { workerId } : {}),
    ...(leaseMs ? { leaseMs } : {}),
    ...(pollMs ? { pollMs } : {}),
    resumable: (goal) => readGitHubGoal(goal.meta) !== undefined,
    work: (job, ctx) =>
      workGoal({ ...deps, abandon: ctx.abandon, fence: ctx.fence, workerId: ctx.workerId, effectClaimMs: claimMs, later, leases: { ledger: opts.ledger, holder: ctx.workerId } }, job.key, job.mode),
    settleEffects: (key) => settleGoalEffects({ ledger: opts.ledger, logger: opts.logger, auth: opts.auth, holder: pool.workerId, claimMs, workspaces: deps }, key),
  });
  return pool;
}
