import { decideWrite, longestWindowMs, type WriteBudgetStore, type WriteDecision, type WriteRequest } from '../ports/write-budget.js';

/** One installation's budget: its pause and the times of its recent writes. */
interface Budget {
  pausedUntilMs: number;
  writesMs: number[];
}

/**
 * The write budget of one process, in memory: for a process with no shared ledger (the Action's
 * job), and the fast tests. Every call runs to the end without awaiting, so it is atomic within
 * the process; `connect()` is another view of the same budgets (another "process" in a test).
 */
export class MemoryWriteBudget implements WriteBudgetStore {
  constructor(private readonly budgets = new Map<string, Budget>()) {}

  connect(): MemoryWriteBudget {
    return new MemoryWriteBudget(this.budgets);
  }

  async tryTakeWrite({ installation, priority, limits, atMs }: WriteRequest): Promise<WriteDecision> {
    const budget = this.budgetOf(installation);
    // Never before the latest write: a caller whose clock lags decides, and writes, at that time.
    const nowMs = budget.writesMs.reduce((latest, t) => Math.max(latest, t), atMs ?? Date.now());
    const horizon = nowMs - longestWindowMs(limits);
    budget.writesMs = budget.writesMs.filter((t) => t > horizon);
    const decision = decideWrite({ nowMs, pausedUntilMs: budget.pausedUntilMs, recentMs: budget.writesMs, priority, limits });
    if (decision.take) budget.writesMs.push(nowMs);
    return decision;
  }

  async pauseWrites(installation: string, forMs: number, atMs?: number): Promise<void> {
    const budget = this.budgetOf(installation);
    budget.pausedUntilMs = Math.max(budget.pausedUntilMs, (atMs ?? Date.now()) + forMs);
  }

  async trimWrites(keepMs: number, atMs?: number): Promise<number> {
    const horizon = (atMs ?? Date.now()) - keepMs;
    let dropped = 0;
    for (const budget of this.budgets.values()) {
      const kept = budget.writesMs.filter((t) => t >= horizon);
      dropped += budget.writesMs.length - kept.length;
      budget.writesMs = kept;
    }
    return dropped;
  }

  private budgetOf(installation: string): Budget {
    let budget = this.budgets.get(installation);
    if (!budget) {
      budget = { pausedUntilMs: 0, writesMs: [] };
      this.budgets.set(installation, budget);
    }
    return budget;
  }
}
