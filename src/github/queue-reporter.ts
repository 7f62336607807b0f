import type { Logger } from 'pino';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { Leases } from '../ports/leases.js';
import type { Outbox } from '../ports/outbox.js';
import type { WorkQueue } from '../ports/queue.js';
import { WriteBudgetTimeoutError } from '../ports/take-write.js';
import { readGitHubMeta } from '../steering/goal-meta.js';
import { snapshotFromLedger } from '../steering/turn/snapshot.js';
import { goalLeaseName, isRunHolder, reportHolder } from '../worker/lease.js';
import { DEFAULT_QUEUE_REPORT_POLICY, decideQueueReport, type QueuedGoalFact, type QueueReportAction, type QueueReportPolicy, type StaleGoalFact } from './decide-queue-report.js';
import { GitHubForge, type Octokit } from './github-forge.js';

export interface QueueReporterOptions {
  ledger: GoalLedger & Leases & Pick<Outbox, 'givenUpEffects'>;
  queue: WorkQueue;
  logger: Logger;
  auth: (installationId: number) => Promise<Octokit>;
  /** Who this process is (its leases carry it). */
  holder: string;
  /** How often the queue is reported. */
  intervalMs: number;
  /** Position refreshes a minute, at most (background writes; each installation's budget still applies). */
  refreshesPerMinute: number;
  /** The most a "queued" comment waits for the write budget before the report tries again later. */
  showMaxWaitMs?: number;
  policy?: QueueReportPolicy;
  clock?: () => number;
}

/** One report runs at a time across processes: the one holding this lease. */
export const QUEUE_REPORT_LEASE = 'queue-report';

const keyName = (k: GoalKey) => `${k.repo}#${k.goalId}`;

/**
 * Shows waiting goals' places in the queue on their issues (decide-queue-report.ts decides what):
 * every `intervalMs` in the process holding the report's lease, and soon after an enqueue. Each
 * write happens under the goal's own lease, so no run of the goal writes its status meanwhile.
 */
export class QueueReporter {
  private timer: NodeJS.Timeout | undefined;
  private soonTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private tokens: number;
  private tokensAt: number;
  private readonly missed = new Map<string, number>();
  private readonly clock: () => number;

  constructor(private readonly opts: QueueReporterOptions) {
    this.clock = opts.clock ?? Date.now;
    this.tokens = opts.refreshesPerMinute;
    this.tokensAt = this.clock();
  }

  start(): void {
    this.timer ??= setInterval(() => this.tick(), this.opts.intervalMs);
    this.timer.unref();
  }

  /** After an enqueue: a report once the goal has waited long enough to be worth a comment. */
  soon(delayMs = this.policy().minWaitMs + 100): void {
    if (this.soonTimer || !this.timer) return;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = undefined;
      this.tick();
    }, delayMs);
    this.soonTimer.unref();
  }

  private policy(): QueueReportPolicy {
    return this.opts.policy ?? DEFAULT_QUEUE_REPORT_POLICY;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.soonTimer);
    this.timer = undefined;
    await this.running;
    await this.opts.ledger.releaseLease(QUEUE_REPORT_LEASE, this.opts.holder).catch(() => undefined);
  }

  private tick(): void {
    if (this.running !== undefined) {
      this.again = true; // asked for while one runs: one more report right after it
      return;
    }
    this.running = this.report()
      .then(() => undefined)
      .catch((err: unknown) => this.opts.logger.warn({ err }, 'queue report failed'))
      .finally(() => {
        this.running = undefined;
        if (this.again && this.timer) {
          this.again = false;
          this.tick();
        }
      });
  }

  /** One report: what it decided (every action was tried; a failed one is tried at a later report). */
  async report(): Promise<QueueReportAction[]> {
    const { ledger, queue } = this.opts;
    // The lease outlives a few missed reports, then another process reports instead.
    if (!(await ledger.acquireLease(QUEUE_REPORT_LEASE, this.opts.holder, Math.max(3 * this.opts.intervalMs, 10_000)))) return [];
    const jobs = (await queue.listQueued()).filter((j) => j.mode !== 'status');
    const [goals, leases] = await Promise.all([ledger.listGoals(), ledger.listLeases()]);
    const run = new Set(leases.filter((l) => l.live && isRunHolder(l.holder)).map((l) => l.name));
    const byName = new Map(goals.map((g) => [goalLeaseName(g), g]));
    const now = this.clock();
    const queued: QueuedGoalFact[] = [];
    for (const job of jobs) {
      const goal = byName.get(goalLeaseName(job.key));
      // A goal whose run is on already waits for that run, not for a worker.
      if (!goal || run.has(goalLeaseName(job.key))) continue;
      const meta = readGitHubMeta(goal.meta);
      if (!meta.github || meta.merged) continue;
      queued.push({ key: job.key, position: queued.length + 1, waitedMs: now - Date.parse(job.enqueuedAt), shown: meta.queueShown });
    }
    // A goal not yet shown that has not waited long enough: a report when it has, not a whole interval later.
    const due = queued.filter((q) => !q.shown && q.waitedMs < this.policy().minWaitMs).map((q) => this.policy().minWaitMs - q.waitedMs);
    if (due.length > 0) this.soon(Math.min(...due) + 100);
    const waiting = new Set(queued.map((q) => keyName(q.key)));
    const stale: StaleGoalFact[] = [];
    for (const goal of goals) {
      const shown = readGitHubMeta(goal.meta).queueShown;
      const name = keyName(goal);
      if (!shown || waiting.has(name) || run.has(goalLeaseName(goal))) {
        this.missed.delete(name);
        continue;
      }
      const missedReports = (this.missed.get(name) ?? 0) + 1;
      this.missed.set(name, missedReports);
      stale.push({ key: { repo: goal.repo, goalId: goal.goalId }, shown, missedReports });
    }
    this.tokens = Math.min(this.opts.refreshesPerMinute, this.tokens + ((now - this.tokensAt) / 60_000) * this.opts.refreshesPerMinute);
    this.tokensAt = now;
    const actions = decideQueueReport({ queued, stale, refreshAllowance: Math.floor(this.tokens) }, this.policy());
    for (const action of actions) {
      try {
        if (await this.perform(action, new Date(now).toISOString())) {
          if (action.type === 'refreshPosition') this.tokens -= 1;
          if (action.type === 'showState') this.missed.delete(keyName(action.key));
        }
      } catch (err) {
        // The budget is tight: the rest waits for a later report rather than hold goals' leases.
        if (err instanceof WriteBudgetTimeoutError) break;
        this.opts.logger.warn({ err, goal: keyName(action.key), action: action.type }, 'queue report write failed');
      }
    }
    return actions;
  }

  /** Performs one action under the goal's lease; false when the goal was taken (or left the queue) meanwhile. */
  private async perform(action: QueueReportAction, at: string): Promise<boolean> {
    const { ledger, queue } = this.opts;
    const lease = goalLeaseName(action.key);
    const holder = reportHolder(this.opts.holder);
    if (!(await ledger.acquireLease(lease, holder, 30_000))) return false;
    try {
      // Asked again under the lease: a worker may have claimed the job since the report looked.
      const stillQueued = (await queue.listQueued()).some((j) => j.mode !== 'status' && keyName(j.key) === keyName(action.key));
      if (stillQueued !== (action.type !== 'showState')) return false;
      const goal = await ledger.getGoal(action.key);
      const g = goal && readGitHubMeta(goal.meta).github;
      if (!g) return false;
      const forge = new GitHubForge({ octokit: await this.opts.auth(g.installationId), goal: g, key: action.key, ledger, logger: this.opts.logger, minUpdateIntervalMs: 0 });
      const snapshot = await snapshotFromLedger(ledger, action.key, g);
      if (action.type === 'showState') await forge.flush(snapshot);
      else await forge.showQueued(snapshot, { position: action.position, at }, action.priority, action.type === 'showQueued' ? (this.opts.showMaxWaitMs ?? 5000) : 0);
      return true;
    } finally {
      await ledger.releaseLease(lease, holder).catch(() => undefined);
    }
  }
}
