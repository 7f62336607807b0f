import type { Logger } from 'pino';
import type { GoalKey } from '../ports/ledger.js';

export type GoalMode = 'run' | 'plan' | 'status';

interface Queued {
  key: GoalKey;
  mode: GoalMode;
  priority: string;
  at: number;
}

const id = (k: GoalKey) => `${k.repo}#${k.goalId}`;
const MODE_RANK: Record<GoalMode, number> = { status: 0, plan: 1, run: 2 };

/**
 * Runs goals in this process: at most `concurrency` at once, P0 before P3 then oldest first,
 * never the same goal twice at the same time (a request for a running goal runs after it).
 */
export class GoalScheduler {
  private readonly queue = new Map<string, Queued>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Map<string, Queued>();
  private waiters: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly work: (key: GoalKey, mode: GoalMode) => Promise<void>,
    private readonly concurrency: number,
    private readonly logger: Logger,
  ) {}

  schedule(key: GoalKey, mode: GoalMode = 'run', priority = 'P2'): void {
    if (this.closed) return;
    const k = id(key);
    const item: Queued = { key, mode, priority, at: Date.now() };
    const target = this.running.has(k) ? this.again : this.queue;
    const prev = target.get(k);
    // Coalesce: one pending request per goal, the strongest mode wins.
    if (!prev || MODE_RANK[mode] >= MODE_RANK[prev.mode]) target.set(k, prev ? { ...item, at: prev.at } : item);
    this.pump();
  }

  /** Drops a queued (not yet running) request for the goal, e.g. after `/goal stop`. */
  cancel(key: GoalKey): void {
    this.queue.delete(id(key));
    this.again.delete(id(key));
  }

  isRunning(key: GoalKey): boolean {
    return this.running.has(id(key));
  }

  /** Resolves when nothing is running or queued (tests, shutdown). */
  idle(): Promise<void> {
    if (this.running.size === 0 && this.queue.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Stops taking work; waits up to `graceMs` for running goals (the rest resume on restart). */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    this.queue.clear();
    this.again.clear();
    await Promise.race([Promise.allSettled([...this.running.values()]), new Promise((r) => setTimeout(r, graceMs).unref())]);
  }

  private pump(): void {
    while (!this.closed && this.running.size < this.concurrency && this.queue.size > 0) {
      const next = [...this.queue.values()].sort((a, b) => a.priority.localeCompare(b.priority) || a.at - b.at)[0]!;
      const k = id(next.key);
      this.queue.delete(k);
      const run = this.work(next.key, next.mode)
        .catch((err: unknown) => this.logger.error({ err, goal: k }, 'goal work failed'))
        .finally(() => {
          this.running.delete(k);
          const again = this.again.get(k);
          if (again) {
            this.again.delete(k);
            this.queue.set(k, again);
          }
          this.pump();
          if (this.running.size === 0 && this.queue.size === 0) for (const w of this.waiters.splice(0)) w();
        });
      this.running.set(k, run);
    }
  }
}
