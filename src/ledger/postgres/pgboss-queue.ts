import type pg from 'pg';
import PgBoss from 'pg-boss';
import type { GoalKey } from '../../ports/goal-ledger.js';
import { type GoalJob, type GoalMode, MODE_RANK, type QueuedJob, type WorkQueue } from '../../ports/queue.js';
import { withTransaction } from './pool.js';

/** pg-boss keeps its tables in its own schema, apart from the ledger's. */
export const PGBOSS_SCHEMA = 'pgboss';
const QUEUE = 'goal-work';
/** Modes weakest first, for the coalescing UPDATE. */
const MODES_BY_RANK = (Object.keys(MODE_RANK) as GoalMode[]).sort((a, b) => MODE_RANK[a] - MODE_RANK[b]);

interface RequestRow {
  job_id: string;
  repo: string;
  goal_id: string;
  mode: string;
  priority: string;
  enqueued_at: string;
  not_before: string;
}

/** pg-boss hands out the highest number first: P0 → 9 … P9 → 0 (anything else ranks as P2). */
export const bossPriority = (priority: string): number => 9 - Number(/^P(\d)$/.exec(priority)?.[1] ?? 2);

/** Lets pg-boss run its statements on our connection, inside our transaction. */
const onClient = (client: pg.PoolClient): PgBoss.Db => ({ executeSql: (text, values) => client.query(text, values) });

/**
 * The scale-out queue: pg-boss 10 carries one job per goal, ordered by priority then age, and
 * claims it with FOR UPDATE SKIP LOCKED, so claimers on many machines never share a job.
 *
 * What pg-boss cannot do is coalesce: a goal has one pending job whose mode, priority and due
 * time absorb later requests. That pending request lives in the ledger's `goal_jobs` table, one
 * row per goal, naming its pg-boss job (`job_id`):
 * - enqueue upserts the row (stronger mode, more urgent priority, earlier due time, age kept) and,
 *   in the same transaction, sends the job when the row is new, or else moves the waiting job's
 *   priority and start time to the merged ones in place, so it keeps its age (created_on).
 * - claim fetches the next job, deletes the row naming it and completes the job, in one
 *   transaction: a crash in between leaves both as they were. A job whose row is gone (cancelled)
 *   is completed and skipped.
 * - cancel deletes the row, then cancels the job.
 * Lock order is always job row then request row, or request row alone, so these never deadlock.
 */
export class PgBossWorkQueue implements WorkQueue {
  private constructor(
    private readonly pool: pg.Pool,
    private readonly boss: PgBoss,
  ) {}

  /**
   * Starts pg-boss on `url` (installing or upgrading its schema) beside a ledger pool already
   * migrated to v3. pg-boss keeps its own small pool for its maintenance; errors there are
   * retried on its next round and reported to `onError`. Callers hold the start-up lock
   * (`withStartupLock`, as `openPostgresStore` does): two processes creating the queue at once
   * can deadlock inside pg-boss's create_queue. If creating the queue fails, pg-boss is stopped again.
   */
  static async start(pool: pg.Pool, url: string, onError: (err: Error) => void = () => undefined): Promise<PgBossWorkQueue> {
    const boss = new PgBoss({
      connectionString: url,
      schema: PGBOSS_SCHEMA,
      max: 2,
      application_name: 'goal-loop-queue',
      schedule: false, // no cron jobs: no clock-skew monitor
      // Maintenance (archiving done jobs) every 10 minutes; no state monitoring.
      maintenanceIntervalMinutes: 10,
    });
    boss.on('error', onError);
    try {
      await boss.start();
      // A pending request is only ever removed by claim or cancel, never by pg-boss's retention.
      await boss.createQueue(QUEUE, { name: QUEUE, policy: 'standard', retentionMinutes: 10 * 365 * 24 * 60 });
    } catch (err) {
      // Its pool would otherwise keep the process alive. (After a failed start() this is a no-op:
      // pg-boss counts itself stopped until start() succeeds.)
      await boss.stop({ graceful: false, close: true }).catch(() => undefined);
      throw err;
    }
    return new PgBossWorkQueue(pool, boss);
  }

  async enqueue(job: GoalJob, opts: { delayMs?: number } = {}): Promise<void> {
    await withTransaction(this.pool, async (c) => {
      // xmax = 0 only on a freshly inserted row: the first request for this goal.
      const { rows } = await c.query<RequestRow & { created: boolean }>(
        `INSERT INTO goal_jobs AS r (repo, goal_id, mode, priority, enqueued_at, not_before)
         VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp() + $5 * interval '1 millisecond')
         ON CONFLICT (repo, goal_id) DO UPDATE SET
           mode = CASE WHEN array_position($6::text[], excluded.mode) > array_position($6::text[], r.mode) THEN excluded.mode ELSE r.mode END,
           priority = LEAST(r.priority, excluded.priority),
           not_before = LEAST(r.not_before, excluded.not_before)
         RETURNING *, xmax = 0 AS created`,
        [job.key.repo, job.key.goalId, job.mode, job.priority, Math.max(0, opts.delayMs ?? 0), MODES_BY_RANK],
      );
      const req = rows[0]!;
      if (req.created) return this.send(c, req);
      // A job being claimed right now is locked: skip it, the claimer returns the merged row.
      const moved = await c.query(
        `UPDATE ${PGBOSS_SCHEMA}.job SET priority = $3, start_after = $4
         WHERE name = $1 AND id = (SELECT id FROM ${PGBOSS_SCHEMA}.job WHERE name = $1 AND id = $2 AND state = 'created' FOR UPDATE SKIP LOCKED)`,
        [QUEUE, req.job_id, bossPriority(req.priority), req.not_before],
      );
      if (moved.rowCount === 0 && !(await this.jobIsLive(c, req.job_id))) {
        // Its job vanished (pg-boss storage cleared by hand): the request gets a new one.
        const fresh = await c.query<{ job_id: string }>('UPDATE goal_jobs SET job_id = gen_random_uuid() WHERE job_id = $1 RETURNING job_id', [req.job_id]);
        await this.send(c, { ...req, job_id: fresh.rows[0]!.job_id });
      }
    });
  }

  private async send(c: pg.PoolClient, req: RequestRow): Promise<void> {
    const data = { repo: req.repo, goalId: req.goal_id };
    const sent = await this.boss.send(QUEUE, data, { id: req.job_id, priority: bossPriority(req.priority), startAfter: req.not_before, db: onClient(c) });
    if (!sent) throw new Error(`queue: pg-boss refused the job for ${req.goal_id} (is its queue "${QUEUE}" missing?)`);
  }

  /** True while pg-boss may still hand the job out (a claim in progress holds it locked, unseen). */
  private async jobIsLive(c: pg.PoolClient, id: string): Promise<boolean> {
    const { rowCount } = await c.query(`SELECT 1 FROM ${PGBOSS_SCHEMA}.job WHERE name = $1 AND id = $2 AND state IN ('created', 'retry', 'active')`, [QUEUE, id]);
    return rowCount === 1;
  }

  async claim(): Promise<QueuedJob | undefined> {
    while (true) {
      const outcome = await withTransaction(this.pool, async (c) => {
        const [job] = await this.boss.fetch(QUEUE, { batchSize: 1, db: onClient(c) });
        if (!job) return 'empty' as const;
        const { rows } = await c.query<RequestRow>('DELETE FROM goal_jobs WHERE job_id = $1 RETURNING *', [job.id]);
        await this.boss.complete(QUEUE, job.id, {}, { db: onClient(c) });
        return rows[0] ? toJob(rows[0]) : ('stale' as const);
      });
      if (outcome === 'empty') return undefined;
      if (outcome !== 'stale') return outcome;
    }
  }

  async cancel(key: GoalKey): Promise<void> {
    const { rows } = await this.pool.query<{ job_id: string }>('DELETE FROM goal_jobs WHERE repo = $1 AND goal_id = $2 RETURNING job_id', [key.repo, key.goalId]);
    // Best effort: a job left behind is skipped by the claim that fetches it.
    if (rows[0]) await this.boss.cancel(QUEUE, rows[0].job_id);
  }

  async listQueued(): Promise<QueuedJob[]> {
    const { rows } = await this.pool.query<RequestRow>('SELECT * FROM goal_jobs ORDER BY not_before > clock_timestamp(), priority, enqueued_at, job_id');
    return rows.map(toJob);
  }

  async close(): Promise<void> {
    // The ledger owns the shared pool; this stops pg-boss's timers and its own pool.
    await this.boss.stop({ graceful: false, close: true });
  }
}

function toJob(r: RequestRow): QueuedJob {
  return {
    id: r.job_id,
    key: { repo: r.repo, goalId: r.goal_id },
    mode: r.mode as GoalMode,
    priority: r.priority,
    enqueuedAt: r.enqueued_at,
    notBefore: r.not_before > r.enqueued_at ? r.not_before : null,
  };
}
