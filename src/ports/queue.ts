import type { GoalKey } from './goal-ledger.js';

/** What a worker does with a goal: run the loop, (re)plan only, or refresh its status. */
export type GoalMode = 'run' | 'plan' | 'status';

export interface GoalJob {
  key: GoalKey;
  mode: GoalMode;
  /** P0 (first) to P3. */
  priority: string;
}

export interface QueuedJob extends GoalJob {
  id: string;
  /** When the goal's oldest pending request was enqueued (ISO 8601). */
  enqueuedAt: string;
  /** Not handed out before this time (ISO 8601), when it was enqueued with a delay. */
  notBefore: string | null;
}

/** Stronger modes win when requests for one goal coalesce. */
export const MODE_RANK: Record<GoalMode, number> = { status: 0, plan: 1, run: 2 };

/**
 * The durable queue of goal work, shared by every worker process that opens the same store.
 * There is at most one pending job per goal: enqueueing again keeps the earlier age, the
 * stronger mode and the more urgent priority. A claimed job is gone from the queue; the
 * claimer then takes the goal's lease (see Leases) before working it.
 */
export interface WorkQueue {
  enqueue(job: GoalJob, opts?: { delayMs?: number }): Promise<void>;
  /** Removes and returns the next due job, P0 before P3 then oldest; concurrent claimers never share one. */
  claim(): Promise<QueuedJob | undefined>;
  /** Drops the goal's pending job, if any (a running goal is stopped through the ledger instead). */
  cancel(key: GoalKey): Promise<void>;
  /** Pending jobs in claim order (due ones first). */
  listQueued(): Promise<QueuedJob[]>;
  close(): Promise<void>;
}
