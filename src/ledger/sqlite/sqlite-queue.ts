import type Database from 'better-sqlite3';
import type { GoalKey } from '../../ports/goal-ledger.js';
import { type GoalJob, type GoalMode, MODE_RANK, type QueuedJob, type WorkQueue } from '../../ports/queue.js';

interface JobRow {
  id: number;
  repo: string;
  goal_id: string;
  mode: string;
  priority: string;
  enqueued_at: number;
  not_before: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The embedded queue: a table in the ledger's SQLite file. One row per goal (coalesced on
 * enqueue); a claim is one DELETE … RETURNING, so processes sharing the file never share a job.
 */
export class SqliteWorkQueue implements WorkQueue {
  constructor(private readonly db: Database.Database) {}

  async enqueue(job: GoalJob, opts: { delayMs?: number } = {}): Promise<void> {
    const at = Date.now();
    const notBefore = at + Math.max(0, opts.delayMs ?? 0);
    this.db.transaction(() => {
      const prev = this.db.prepare('SELECT * FROM goal_jobs WHERE repo = ? AND goal_id = ?').get(job.key.repo, job.key.goalId) as JobRow | undefined;
      if (!prev) {
        this.db
          .prepare('INSERT INTO goal_jobs (repo, goal_id, mode, priority, enqueued_at, not_before) VALUES (?, ?, ?, ?, ?, ?)')
          .run(job.key.repo, job.key.goalId, job.mode, job.priority, at, notBefore);
        return;
      }
      const mode = MODE_RANK[job.mode] > MODE_RANK[prev.mode as GoalMode] ? job.mode : prev.mode;
      // biome-ignore lint/complexity/useMathMinMax: a priority is a string, compared as text; Math.min would turn it into NaN
      const priority = job.priority < prev.priority ? job.priority : prev.priority;
      // A request without delay makes a delayed one due now; a delayed one never postpones it.
      this.db.prepare('UPDATE goal_jobs SET mode = ?, priority = ?, not_before = ? WHERE id = ?').run(mode, priority, Math.min(prev.not_before, notBefore), prev.id);
    })();
  }

  async claim(): Promise<QueuedJob | undefined> {
    const row = this.db
      .prepare(
        `DELETE FROM goal_jobs WHERE id = (
           SELECT id FROM goal_jobs WHERE not_before <= ? ORDER BY priority, enqueued_at, id LIMIT 1
         ) RETURNING *`,
      )
      .get(Date.now()) as JobRow | undefined;
    return row && toJob(row);
  }

  async cancel(key: GoalKey): Promise<void> {
    this.db.prepare('DELETE FROM goal_jobs WHERE repo = ? AND goal_id = ?').run(key.repo, key.goalId);
  }

  async listQueued(): Promise<QueuedJob[]> {
    const at = Date.now();
    const rows = this.db.prepare('SELECT * FROM goal_jobs ORDER BY not_before > ?, priority, enqueued_at, id').all(at) as JobRow[];
    return rows.map(toJob);
  }

  async close(): Promise<void> {
    // The database belongs to the ledger that shares it.
  }
}

function toJob(r: JobRow): QueuedJob {
  return {
    id: String(r.id),
    key: { repo: r.repo, goalId: r.goal_id },
    mode: r.mode as GoalMode,
    priority: r.priority,
    enqueuedAt: iso(r.enqueued_at),
    notBefore: r.not_before > r.enqueued_at ? iso(r.not_before) : null,
  };
}
