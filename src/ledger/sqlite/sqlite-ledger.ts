import type Database from 'better-sqlite3';
import type { GoalSpec } from '../../goal/schema.js';
import type { GoalState } from '../../goal/states.js';
import type {
  AttemptRecord,
  ControlRequest,
  CounterDelta,
  Counters,
  EffectInput,
  EventRecord,
  GivenUpEffect,
  GoalChange,
  GoalKey,
  GoalRecord,
  InboxEntry,
  LeaseRecord,
  Ledger,
  PendingEffect,
  TaskPatch,
  TaskRecord,
} from '../../ports/ledger.js';
import {
  counterDeltas,
  TASK_COLUMNS,
  toAttempt,
  toEffect,
  toGivenUpEffect,
  toEvent,
  toGoal,
  toInboxEntry,
  toTask,
  unknownGoal,
  type AttemptRow,
  type AttemptEntryRow,
  toAttemptLogEntry,
  type DeliveryRow,
  type EffectRow,
  type EventRow,
  type GoalRow,
  type TaskRow,
} from '../rows.js';
import { trimForLedger } from '../trim.js';
import type { AttemptEntry, AttemptLogEntry, AttemptLogFilter } from '../../ports/attempt-log.js';
import { openSqlite } from './database.js';
import { SqliteLeases } from './sqlite-leases.js';

const now = () => new Date().toISOString();

/** The embedded ledger: one SQLite file, WAL mode, safe for one writer process at a time. */
export class SqliteLedger implements Ledger {
  private readonly db: Database.Database;
  private readonly leases: SqliteLeases;

  /** Opens (and migrates) the file at `path`, or shares an already opened database. */
  constructor(pathOrDb: string | Database.Database) {
    this.db = typeof pathOrDb === 'string' ? openSqlite(pathOrDb) : pathOrDb;
    this.leases = new SqliteLeases(this.db);
  }

  async upsertGoal(key: GoalKey, input: { spec: GoalSpec; branch: string; priority?: string }): Promise<GoalRecord> {
    const at = now();
    this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO goals (repo, goal_id, objective, spec_json, state, branch, priority, created_at, updated_at)
           VALUES (?, ?, ?, ?, 'INITIALIZING', ?, ?, ?, ?)
           ON CONFLICT (repo, goal_id) DO UPDATE SET objective = excluded.objective, spec_json = excluded.spec_json,
             branch = excluded.branch, priority = COALESCE(?, goals.priority), updated_at = excluded.updated_at`,
        )
        .run(key.repo, key.goalId, input.spec.objective, JSON.stringify(input.spec), input.branch, input.priority ?? 'P2', at, at, input.priority ?? null);
      const goal = this.goalRow(key)!.id;
      const keep = new Set(input.spec.tasks.map((t) => t.id));
      for (const row of this.db.prepare('SELECT task_id FROM tasks WHERE goal = ?').all(goal) as Array<{ task_id: string }>) {
        if (!keep.has(row.task_id)) this.db.prepare('DELETE FROM tasks WHERE goal = ? AND task_id = ?').run(goal, row.task_id);
      }
      const upsert = this.db.prepare(
        `INSERT INTO tasks (goal, task_id, position, title, status, updated_at) VALUES (?, ?, ?, ?, 'pending', ?)
         ON CONFLICT (goal, task_id) DO UPDATE SET position = excluded.position, title = excluded.title`,
      );
      input.spec.tasks.forEach((t, i) => upsert.run(goal, t.id, i, t.title, at));
    })();
    return (await this.getGoal(key))!;
  }

  async getGoal(key: GoalKey): Promise<GoalRecord | undefined> {
    const row = this.goalRow(key);
    return row ? toGoal(row) : undefined;
  }

  async listGoals(filter: { exceptStates?: Iterable<GoalState> } = {}): Promise<GoalRecord[]> {
    const except = [...(filter.exceptStates ?? [])];
    const where = except.length ? `WHERE state NOT IN (${except.map(() => '?').join(', ')})` : '';
    return (this.db.prepare(`SELECT * FROM goals ${where} ORDER BY updated_at DESC, id DESC`).all(...except) as GoalRow[]).map(toGoal);
  }

  async setState(key: GoalKey, state: GoalState, event: string, detail?: string | null, stopReason?: string | null): Promise<void> {
    await this.recordChange(key, { transitions: [{ to: state, event, detail: detail ?? null, ...(stopReason !== undefined ? { stopReason } : {}) }] });
  }

  async recordChange(key: GoalKey, change: GoalChange): Promise<void> {
    const at = now();
    // IMMEDIATE: it reads, then writes; a deferred one would fail at once if another process wrote between.
    this.db.transaction(() => {
      let row = this.requireGoal(key);
      for (const t of change.transitions ?? []) {
        this.db
          .prepare('UPDATE goals SET state = ?, stop_reason = ?, updated_at = ? WHERE id = ?')
          .run(t.to, t.stopReason === undefined ? row.stop_reason : t.stopReason, at, row.id);
        this.db
          .prepare('INSERT INTO events (goal, at, from_state, to_state, event, detail) VALUES (?, ?, ?, ?, ?, ?)')
          .run(row.id, at, row.state, t.to, t.event, t.detail ?? null);
        row = { ...row, state: t.to, stop_reason: t.stopReason === undefined ? row.stop_reason : t.stopReason };
      }
      for (const t of change.tasks ?? []) this.patchTask(key, row.id, t.taskId, t.patch);
      if (change.counters) this.addCountersNow(key, change.counters);
      if (change.meta) this.mergeMeta(key, change.meta);
      for (const e of change.effects ?? []) this.insertEffect(row.id, e);
    }).immediate();
  }

  async listTasks(key: GoalKey): Promise<TaskRecord[]> {
    const goal = this.requireGoal(key).id;
    return (this.db.prepare('SELECT * FROM tasks WHERE goal = ? ORDER BY position').all(goal) as TaskRow[]).map(toTask);
  }

  async updateTask(key: GoalKey, taskId: string, patch: TaskPatch): Promise<void> {
    this.patchTask(key, this.requireGoal(key).id, taskId, patch);
  }

  async recordAttempt(key: GoalKey, a: AttemptRecord): Promise<void> {
    const goal = this.requireGoal(key).id;
    this.db
      .prepare(
        `INSERT INTO attempts (goal, task_id, attempt, phase, passed, exit_code, output, log_path, duration_ms, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(goal, a.taskId, a.attempt, a.phase, Number(a.passed), a.exitCode, trimForLedger(a.output), a.logPath ?? null, a.durationMs, now());
  }

  async listAttempts(key: GoalKey, taskId?: string): Promise<AttemptRecord[]> {
    const goal = this.requireGoal(key).id;
    const rows = (
      taskId
        ? this.db.prepare('SELECT * FROM attempts WHERE goal = ? AND task_id = ? ORDER BY id').all(goal, taskId)
        : this.db.prepare('SELECT * FROM attempts WHERE goal = ? ORDER BY id').all(goal)
    ) as AttemptRow[];
    return rows.map(toAttempt);
  }

  async appendAttemptEntry(key: GoalKey, taskId: string, attempt: number, entry: AttemptEntry): Promise<void> {
    this.db
      .prepare('INSERT INTO attempt_entries (goal, task_id, attempt, at, entry_json) VALUES (?, ?, ?, ?, ?)')
      .run(this.requireGoal(key).id, taskId, attempt, now(), JSON.stringify(entry));
  }

  async listAttemptEntries(key: GoalKey, filter: AttemptLogFilter = {}): Promise<AttemptLogEntry[]> {
    const rows = this.db
      .prepare(
        `SELECT * FROM attempt_entries WHERE goal = ? AND seq > ?
           AND (? IS NULL OR task_id = ?) AND (? IS NULL OR attempt = ?) ORDER BY seq`,
      )
      .all(this.requireGoal(key).id, filter.afterSeq ?? 0, filter.taskId ?? null, filter.taskId ?? null, filter.attempt ?? null, filter.attempt ?? null) as AttemptEntryRow[];
    return rows.map(toAttemptLogEntry);
  }

  async listEvents(key: GoalKey): Promise<EventRecord[]> {
    const goal = this.requireGoal(key).id;
    const rows = this.db.prepare('SELECT * FROM events WHERE goal = ? ORDER BY id').all(goal) as EventRow[];
    return rows.map(toEvent);
  }

  async addCounters(key: GoalKey, delta: CounterDelta): Promise<Counters> {
    return this.addCountersNow(key, delta);
  }

  async setControl(key: GoalKey, control: ControlRequest | null): Promise<void> {
    this.db.prepare('UPDATE goals SET control = ?, updated_at = ? WHERE id = ?').run(control, now(), this.requireGoal(key).id);
  }


  async setMeta(key: GoalKey, patch: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.db.transaction(() => this.mergeMeta(key, patch))();
  }

  async updateMeta(key: GoalKey, update: (meta: Record<string, unknown>) => Record<string, unknown>): Promise<Record<string, unknown>> {
    // IMMEDIATE: the read and the write under one write lock, whichever process writes the file.
    return this.db
      .transaction(() => this.mergeMeta(key, update(JSON.parse(this.requireGoal(key).meta_json) as Record<string, unknown>)))
      .immediate();
  }

  async pendingEffects(filter: { key?: GoalKey; settledForMs?: number } = {}): Promise<PendingEffect[]> {
    const where = ['e.done_at IS NULL'];
    const args: unknown[] = [];
    if (filter.key) {
      where.push('g.repo = ? AND g.goal_id = ?');
      args.push(filter.key.repo, filter.key.goalId);
    }
    if (filter.settledForMs !== undefined) {
      const at = Date.now();
      where.push('e.claimed_until <= ? AND e.created_at <= ?');
      args.push(at, at - filter.settledForMs);
    }
    const rows = this.db
      .prepare(`SELECT e.*, g.repo, g.goal_id FROM effects e JOIN goals g ON g.id = e.goal WHERE ${where.join(' AND ')} ORDER BY e.id`)
      .all(...args) as EffectRow[];
    return rows.map(toEffect);
  }

  async claimEffect(id: number, holder: string, ttlMs: number): Promise<number> {
    const at = Date.now();
    const row = this.db
      .prepare('UPDATE effects SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1 WHERE id = ? AND done_at IS NULL AND claimed_until <= ? RETURNING attempts')
      .get(holder, at + ttlMs, id, at) as { attempts: number } | undefined;
    return row?.attempts ?? 0;
  }

  async completeEffect(id: number): Promise<void> {
    this.db.prepare('UPDATE effects SET done_at = ?, claimed_until = 0 WHERE id = ?').run(Date.now(), id);
  }

  async failEffect(id: number, holder: string, error: string, retryInMs: number): Promise<void> {
    this.db
      .prepare('UPDATE effects SET last_error = ?, claimed_until = ? WHERE id = ? AND claimed_by = ? AND done_at IS NULL')
      .run(trimForLedger(error), Date.now() + retryInMs, id, holder);
  }

  async giveUpEffect(id: number, holder: string, error: string): Promise<void> {
    const at = Date.now();
    this.db
      .prepare('UPDATE effects SET last_error = ?, done_at = ?, given_up_at = ?, claimed_until = 0 WHERE id = ? AND claimed_by = ? AND done_at IS NULL')
      .run(trimForLedger(error), at, at, id, holder);
  }

  async givenUpEffects(filter: { key?: GoalKey } = {}): Promise<GivenUpEffect[]> {
    const where = ['e.given_up_at IS NOT NULL'];
    const args: unknown[] = [];
    if (filter.key) {
      where.push('g.repo = ? AND g.goal_id = ?');
      args.push(filter.key.repo, filter.key.goalId);
    }
    const rows = this.db
      .prepare(`SELECT e.*, g.repo, g.goal_id FROM effects e JOIN goals g ON g.id = e.goal WHERE ${where.join(' AND ')} ORDER BY e.id`)
      .all(...args) as EffectRow[];
    return rows.map(toGivenUpEffect);
  }

  async recordDelivery(id: string, event?: unknown): Promise<boolean> {
    const info = this.db
      .prepare('INSERT OR IGNORE INTO deliveries (id, received_at, event_json) VALUES (?, ?, ?)')
      .run(id, now(), event === undefined ? null : JSON.stringify(event));
    return info.changes === 1;
  }

  async markDeliveryHandled(id: string): Promise<void> {
    this.db.prepare('UPDATE deliveries SET handled_at = ? WHERE id = ? AND handled_at IS NULL').run(now(), id);
  }

  async unhandledDeliveries(): Promise<InboxEntry[]> {
    const rows = this.db
      .prepare('SELECT id, event_json, received_at FROM deliveries WHERE event_json IS NOT NULL AND handled_at IS NULL ORDER BY received_at, rowid')
      .all() as DeliveryRow[];
    return rows.map(toInboxEntry);
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.leases.acquire(name, holder, ttlMs);
  }

  async renewLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.leases.renew(name, holder, ttlMs);
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    this.leases.release(name, holder);
  }

  async listLeases(): Promise<LeaseRecord[]> {
    return this.leases.list();
  }

  async prune(opts: { expiredLeasesMs: number; handledDeliveriesMs: number }): Promise<{ leases: number; deliveries: number; effects: number }> {
    const at = Date.now();
    const leases = this.db.prepare('DELETE FROM leases WHERE expires_at < ?').run(at - opts.expiredLeasesMs).changes;
    const before = new Date(at - opts.handledDeliveriesMs).toISOString();
    const deliveries = this.db.prepare('DELETE FROM deliveries WHERE handled_at IS NOT NULL AND received_at < ?').run(before).changes;
    // A given-up effect stays: it is what `status` and the status comment report.
    const effects = this.db.prepare('DELETE FROM effects WHERE done_at IS NOT NULL AND given_up_at IS NULL AND done_at < ?').run(at - opts.handledDeliveriesMs).changes;
    return { leases, deliveries, effects };
  }

  async close(): Promise<void> {
    this.db.close();
  }

  private patchTask(key: GoalKey, goal: number, taskId: string, patch: TaskPatch): void {
    const sets: string[] = [];
    const values: unknown[] = [];
    for (const [k, v] of Object.entries(patch)) {
      const col = TASK_COLUMNS[k];
      if (!col || v === undefined) continue;
      sets.push(`${col} = ?`);
      values.push(typeof v === 'boolean' ? Number(v) : k === 'lastError' && typeof v === 'string' ? trimForLedger(v) : v);
    }
    if (sets.length === 0) return;
    const info = this.db
      .prepare(`UPDATE tasks SET ${sets.join(', ')}, updated_at = ? WHERE goal = ? AND task_id = ?`)
      .run(...values, now(), goal, taskId);
    if (info.changes === 0) throw new Error(`ledger: goal ${key.goalId} has no task "${taskId}"`);
  }

  private addCountersNow(key: GoalKey, delta: CounterDelta): Counters {
    const row = this.db
      .prepare(
        `UPDATE goals SET iterations = iterations + ?, errors = errors + ?, errors_recovered = errors_recovered + ?,
           input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?,
           cache_write_tokens = cache_write_tokens + ?, cost_usd = cost_usd + ?, updated_at = ?
         WHERE repo = ? AND goal_id = ? RETURNING *`,
      )
      .get(...counterDeltas(delta), now(), key.repo, key.goalId) as GoalRow | undefined;
    if (!row) throw unknownGoal(key);
    return toGoal(row).counters;
  }

  private mergeMeta(key: GoalKey, patch: Record<string, unknown>): Record<string, unknown> {
    const row = this.requireGoal(key);
    const meta = { ...(JSON.parse(row.meta_json) as Record<string, unknown>) };
    for (const [k, v] of Object.entries(patch)) {
      if (v === null || v === undefined) delete meta[k];
      else meta[k] = v;
    }
    this.db.prepare('UPDATE goals SET meta_json = ?, updated_at = ? WHERE id = ?').run(JSON.stringify(meta), now(), row.id);
    return meta;
  }

  private insertEffect(goal: number, e: EffectInput): void {
    this.db.prepare('INSERT INTO effects (goal, kind, payload_json, created_at) VALUES (?, ?, ?, ?)').run(goal, e.kind, JSON.stringify(e.payload ?? null), Date.now());
  }

  private goalRow(key: GoalKey): GoalRow | undefined {
    return this.db.prepare('SELECT * FROM goals WHERE repo = ? AND goal_id = ?').get(key.repo, key.goalId) as GoalRow | undefined;
  }

  private requireGoal(key: GoalKey): GoalRow {
    const row = this.goalRow(key);
    if (!row) throw unknownGoal(key);
    return row;
  }
}
