import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { childLogger } from '../common/child-logger.js';
import { RESTING_STATES } from '../goal/states.js';
import { GoalAbandonedError } from '../loop/controller.js';
import type { GoalKey, GoalLedger, GoalRecord } from '../ports/goal-ledger.js';
import type { Leases } from '../ports/leases.js';
import type { Ledger } from '../ports/ledger.js';
import type { Outbox } from '../ports/outbox.js';
import type { QueuedJob, WorkQueue } from '../ports/queue.js';
import { goalLeaseName, keepLease, settlingHolder } from './lease.js';

export interface JobContext {
  workerId: string;
  /** Fires when the worker must let go of the goal: lease lost or shutdown (see runGoal's `abandon`). */
  abandon: AbortSignal;
  /** Renews the goal's lease now; false when another worker holds it (see runGoal's `fence`). */
  fence: () => Promise<boolean>;
}

export interface WorkerPoolOptions {
  /** The goals it sweeps, their leases, the effects nobody performed, and the housekeeping it runs. */
  ledger: Pick<GoalLedger, 'listGoals' | 'getGoal'> & Leases & Pick<Outbox, 'pendingEffects'> & Pick<Ledger, 'prune'>;
  queue: WorkQueue;
  logger: Logger;
  /** Works one claimed job while the pool holds the goal's lease. */
  work: (job: QueuedJob, ctx: JobContext) => Promise<void>;
  /** Goals this pool works at once (GOAL_LOOP_CONCURRENCY). */
  concurrency: number;
  workerId?: string;
  /** Lease time to live; a dead worker's goals are resumed this long after its last heartbeat. */
  leaseMs?: number;
  /** How often an idle pool looks at the queue. */
  pollMs?: number;
  /** How often the pool looks for goals whose worker died. */
  sweepMs?: number;
  /** Which unfinished goals the sweep may resume (e.g. only GitHub goals). Default: all. */
  resumable?: (goal: GoalRecord) => boolean;
  /**
   * Performs a goal's pending outbox effects (called by the sweep, under the goal's lease, for
   * effects no one performed: their process died between the write and the effect).
   */
  settleEffects?: (key: GoalKey) => Promise<number>;
}

export const DEFAULT_LEASE_MS = 30_000;
const PRUNE_EVERY_MS = 10 * 60_000;

/**
 * Works goals from the durable queue: at most `concurrency` at a time, each under a lease with
 * a heartbeat, so one goal is never worked by two workers and a dead worker's goals come back.
 */
export class WorkerPool {
  readonly workerId: string;
  private readonly leaseMs: number;
  private readonly active = new Map<string, { done: Promise<void>; abandon: AbortController }>();
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private pumping: Promise<void> | undefined;
  private again = false;
  private readonly waiters: Array<() => void> = [];
  /** Goals whose pending effects the sweep is performing now (under their lease, see settlingHolder). */
  private readonly settling = new Set<string>();
  /** Goals a job is being started for (between its claim and `active`). */
  private readonly starting = new Set<string>();
  /** Goals the last sweep found neither queued nor leased. */
  private suspects = new Set<string>();
  private prunedAt = 0;
  /** How many times in a row a goal's job found the goal held by another worker. */
  private readonly contended = new Map<string, number>();
  /** Goals whose work failed here, and until when the sweep leaves them alone. */
  private readonly failures = new Map<string, { count: number; until: number }>();

  constructor(private readonly opts: WorkerPoolOptions) {
    this.workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  }

  /** Starts polling; resumes interrupted goals whose leases have expired. */
  start(): void {
    if (this.running) return;
    this.running = true;
    const pollMs = this.opts.pollMs ?? 1000;
    this.timer = setInterval(() => this.kick(), pollMs);
    this.sweeper = setInterval(() => void this.sweep().catch((err: unknown) => this.opts.logger.error({ err }, 'sweep failed')), this.opts.sweepMs ?? Math.max(200, this.leaseMs / 3));
    this.timer.unref();
    this.sweeper.unref();
    void this.sweep().catch((err: unknown) => this.opts.logger.error({ err }, 'sweep failed'));
    this.kick();
  }

  get activeCount(): number {
    return this.active.size;
  }

  /** Looks at the queue now (after an enqueue in this process) instead of at the next poll. */
  kick(): void {
    if (!this.running) return;
    if (this.pumping !== undefined) {
      this.again = true;
      return;
    }
    this.pumping = this.pump()
      .catch((err: unknown) => this.opts.logger.error({ err }, 'queue poll failed'))
      .finally(() => {
        this.pumping = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        } else this.notifyIfIdle();
      });
  }

  /**
   * Enqueues a run for every unfinished goal that nobody holds and nobody queued, two sweeps in
   * a row: what a dead worker left behind. (Two, because a job is briefly neither queued nor
   * leased while a worker takes it.) Returns how many it queued.
   */
  async sweep(): Promise<number> {
    const { ledger, queue } = this.opts;
    // Queue before leases: a job claimed between the two reads shows up as a lease (or not at all).
    const queued = await queue.listQueued();
    const [goals, leases] = await Promise.all([ledger.listGoals({ exceptStates: RESTING_STATES }), ledger.listLeases()]);
    const held = new Set(leases.filter((l) => l.live).map((l) => l.name));
    const pending = new Set(queued.map((j) => goalLeaseName(j.key)));
    const orphans = new Set<string>();
    let n = 0;
    for (const goal of goals) {
      const name = goalLeaseName(goal);
      if (held.has(name) || pending.has(name) || this.active.has(name)) continue;
      if ((this.failures.get(name)?.until ?? 0) > Date.now()) continue;
      if (!(this.opts.resumable?.(goal) ?? true)) continue;
      orphans.add(name);
      if (!this.suspects.has(name)) continue;
      this.opts.logger.info({ goal: name, state: goal.state }, 'resuming a goal whose worker stopped');
      await queue.enqueue({ key: { repo: goal.repo, goalId: goal.goalId }, mode: 'run', priority: goal.priority });
      orphans.delete(name);
      n += 1;
    }
    this.suspects = orphans;
    if (n) this.kick();
    await this.settleOrphanedEffects();
    if (Date.now() - this.prunedAt > PRUNE_EVERY_MS) {
      this.prunedAt = Date.now();
      const dropped = await ledger.prune({ expiredLeasesMs: 60 * 60_000, handledDeliveriesMs: 30 * 24 * 60 * 60_000 });
      if (dropped.leases || dropped.deliveries) this.opts.logger.info(dropped, 'pruned expired leases and old handled deliveries');
    }
    return n;
  }

  /**
   * Effects recorded (or last tried) more than a lease ago and still pending, of goals no one
   * holds: performed here, under the goal's lease, so a goal converges to what its row implies.
   */
  private async settleOrphanedEffects(): Promise<void> {
    const settle = this.opts.settleEffects;
    if (!settle) return;
    const pending = await this.opts.ledger.pendingEffects({ settledForMs: this.leaseMs });
    const goals = new Map(pending.map((e) => [goalLeaseName(e.key), e.key]));
    const holder = settlingHolder(this.workerId);
    for (const [name, key] of goals) {
      if (!this.running || this.active.has(name) || this.starting.has(name)) continue;
      this.settling.add(name);
      if (!(await this.opts.ledger.acquireLease(name, holder, this.leaseMs).catch(() => false))) {
        this.settling.delete(name);
        continue;
      }
      try {
        const done = await settle(key);
        if (done) this.opts.logger.info({ goal: name, effects: done }, 'performed effects a stopped worker left pending');
      } catch (err) {
        this.opts.logger.warn({ err, goal: name }, 'cannot perform pending effects');
      } finally {
        this.settling.delete(name);
        await this.opts.ledger.releaseLease(name, holder).catch(() => undefined);
      }
    }
  }

  /** Resolves when this pool has nothing running and the queue has nothing due. */
  async idle(): Promise<void> {
    while (true) {
      if (this.active.size === 0 && !this.pumping) {
        const due = (await this.opts.queue.listQueued()).filter((j) => !j.notBefore || Date.parse(j.notBefore) <= Date.now());
        if (due.length === 0 && this.active.size === 0 && !this.pumping) return;
        this.kick();
      }
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50).unref();
      });
    }
  }

  /**
   * Stops taking work and waits up to `graceMs` for running goals; goals still running then are
   * abandoned (their state untouched) and their leases released, so another worker resumes them.
   */
  async close(graceMs = 10_000): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    clearInterval(this.sweeper);
    await this.pumping;
    const all = () => Promise.allSettled([...this.active.values()].map((a) => a.done));
    const timedOut = await Promise.race([all().then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (timedOut) {
      for (const a of this.active.values()) a.abandon.abort();
      // Abandoning stops the loop between steps; a step that ignores it (a push, a planner call)
      // gets a last grace period, then its lease simply expires.
      await Promise.race([all(), new Promise((r) => setTimeout(r, Math.max(graceMs, 5000)).unref())]);
    }
  }

  /** How long a job waits before it is offered again after it could not start. */
  private retryDelayMs(): number {
    return Math.min(2000, this.leaseMs / 2);
  }

  private async pump(): Promise<void> {
    while (this.running && this.active.size < this.opts.concurrency) {
      const job = await this.opts.queue.claim();
      if (!job) return;
      try {
        await this.begin(job);
      } catch (err) {
        // The job left the queue but was not started: put it back rather than lose it.
        this.opts.logger.error({ err, goal: goalLeaseName(job.key) }, 'cannot start a job; it goes back to the queue');
        await this.opts.queue.enqueue({ key: job.key, mode: job.mode, priority: job.priority }, { delayMs: this.retryDelayMs() });
        await this.opts.ledger.releaseLease(goalLeaseName(job.key), this.workerId).catch(() => undefined);
        return;
      }
    }
  }

  private async begin(job: QueuedJob): Promise<void> {
    const name = goalLeaseName(job.key);
    this.starting.add(name);
    try {
      await this.startJob(job, name);
    } finally {
      this.starting.delete(name);
    }
  }

  private async startJob(job: QueuedJob, name: string): Promise<void> {
    const { ledger, queue, logger } = this.opts;
    if (this.active.has(name) || this.settling.has(name) || !(await ledger.acquireLease(name, this.workerId, this.leaseMs))) {
      // Someone works the goal now: ask again later, backing off (up to a lease's time) so a
      // goal worked for hours does not churn the queue every few seconds.
      const n = (this.contended.get(name) ?? 0) + 1;
      this.contended.set(name, n);
      const longest = Math.max(this.retryDelayMs(), Math.min(30_000, this.leaseMs));
      const delayMs = Math.min(longest, this.retryDelayMs() * 2 ** (n - 1));
      await queue.enqueue({ key: job.key, mode: job.mode, priority: job.priority }, { delayMs });
      return;
    }
    this.contended.delete(name);
    const goal = await ledger.getGoal(job.key);
    if (!goal || (job.mode === 'run' && goal.control && RESTING_STATES.has(goal.state))) {
      // The goal is gone, or a human paused or stopped it after this run was asked for.
      logger.info({ goal: name, mode: job.mode }, 'dropping a job the goal no longer wants');
      await ledger.releaseLease(name, this.workerId);
      return;
    }
    const held = keepLease(ledger, name, this.workerId, this.leaseMs, logger);
    const abandon = new AbortController();
    held.lost.addEventListener('abort', () => abandon.abort(), { once: true });
    const log = childLogger(logger, { goal: name, worker: this.workerId });
    log.info({ mode: job.mode }, 'working goal');
    const done = this.opts
      .work(job, { workerId: this.workerId, abandon: abandon.signal, fence: () => ledger.renewLease(name, this.workerId, this.leaseMs) })
      .then(
        () => {
          this.failures.delete(name);
        },
        (err: unknown) => {
          if (err instanceof GoalAbandonedError) return log.warn('goal abandoned; another worker will resume it');
          // The sweep would resume it at once; back off (30 s, doubling to 15 min) so a goal that
          // fails before its loop starts (GitHub down, app uninstalled) is not retried in a spin.
          const count = (this.failures.get(name)?.count ?? 0) + 1;
          const waitMs = Math.min(15 * 60_000, 30_000 * 2 ** (count - 1));
          this.failures.set(name, { count, until: Date.now() + waitMs });
          log.error({ err, failures: count, retryInS: waitMs / 1000 }, 'goal work failed');
        },
      )
      // biome-ignore lint/nursery/noMisusedPromises: finally waits for the returned promise, so `done` settles only after the lock is released
      .finally(async () => {
        log.info({ mode: job.mode }, 'goal work ended');
        await held.release();
        this.active.delete(name);
        this.kick();
        this.notifyIfIdle();
      });
    this.active.set(name, { done, abandon });
  }

  private notifyIfIdle(): void {
    if (this.active.size === 0 && !this.pumping) for (const w of this.waiters.splice(0)) w();
  }
}
