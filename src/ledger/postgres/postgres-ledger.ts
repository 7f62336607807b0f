import type pg from 'pg';
import type { GoalSpec } from '../../goal/schema.js';
import type { GoalState } from '../../goal/states.js';
import type {
  AttemptRecord,
  ControlRequest,
  CounterDelta,
  Counters,
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
import { migratePostgres } from './migrations.js';
import { PostgresLeases } from './postgres-leases.js';
import { createPool, pgText, toJsonb, withTransaction } from './pool.js';

/**
 * The scale-out ledger: PostgreSQL shared by any number of processes on any number of machines.
 * Behaves exactly like SqliteLedger; every write that reads before it writes is one statement or
 * one transaction with the goal row locked, and times come from the database's clock.
 */
export class PostgresLedger implements Ledger {
  private readonly leases: PostgresLeases;

  /** Shares an already migrated pool (see `open`); `close` ends it. */
  constructor(private readonly pool: pg.Pool) {
    this.leases = new PostgresLeases(pool);
  }

  /** Connects to `url` and migrates the schema. */
  static async open(url: string): Promise<PostgresLedger> {
    const pool = createPool(url);
    try {
      await migratePostgres(pool);
    } catch (err) {
      await pool.end();
      throw err;
    }
    return new PostgresLedger(pool);
  }

  async upsertGoal(key: GoalKey, input: { spec: GoalSpec; branch: string; priority?: string }): Promise<GoalRecord> {
    const { spec } = input;
    const row = await withTransaction(this.pool, async (c) => {
      const { rows } = await c.query<GoalRow>(
        `INSERT INTO goals (repo, goal_id, objective, spec_json, state, branch, priority, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'INITIALIZING', $5, COALESCE($6::text, 'P2'), clock_timestamp(), clock_timestamp())
         ON CONFLICT (repo, goal_id) DO UPDATE SET objective = excluded.objective, spec_json = excluded.spec_json,
           branch = excluded.branch, priority = COALESCE($6, goals.priority), updated_at = excluded.updated_at
         RETURNING *`,
        [key.repo, key.goalId, pgText(spec.objective), JSON.stringify(spec), input.branch, input.priority ?? null],
      );
      const goal = rows[0]!;
      const ids = spec.tasks.map((t) => t.id);
      await c.query('DELETE FROM tasks WHERE goal = $1 AND NOT (task_id = ANY($2::text[]))', [goal.id, ids]);
      await c.query(
        `INSERT INTO tasks (goal, task_id, position, title, status, updated_at)
         SELECT $1, t.id, t.n - 1, t.title, 'pending', clock_timestamp() FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(id, title, n)
         ON CONFLICT (goal, task_id) DO UPDATE SET position = excluded.position, title = excluded.title`,
        [goal.id, ids, spec.tasks.map((t) => pgText(t.title))],
      );
      return goal;
    });
    return toGoal(row);
  }

  async getGoal(key: GoalKey): Promise<GoalRecord | undefined> {
    const row = await this.goalRow(this.pool, key);
    return row && toGoal(row);
  }

  async listGoals(filter: { exceptStates?: Iterable<GoalState> } = {}): Promise<GoalRecord[]> {
    const except = [...(filter.exceptStates ?? [])];
    const { rows } = await this.pool.query<GoalRow>('SELECT * FROM goals WHERE NOT (state = ANY($1::text[])) ORDER BY updated_at DESC, id DESC', [except]);
    return rows.map(toGoal);
  }

  async setState(key: GoalKey, state: GoalState, event: string, detail?: string | null, stopReason?: string | null): Promise<void> {
    await this.recordChange(key, { transitions: [{ to: state, event, detail: detail ?? null, ...(stopReason !== undefined ? { stopReason } : {}) }] });
  }

  async recordChange(key: GoalKey, change: GoalChange): Promise<void> {
    await withTransaction(this.pool, async (c) => {
      // Locked, so each event's `from` is the state it replaced, even under concurrent changes.
      let row = await this.goalRow(c, key, 'FOR UPDATE');
      if (!row) throw unknownGoal(key);
      for (const t of change.transitions ?? []) {
        const stopReason: string | null = t.stopReason === undefined ? row.stop_reason : pgText(t.stopReason);
        const { rows } = await c.query<{ updated_at: string }>(
          'UPDATE goals SET state = $1, stop_reason = $2, updated_at = clock_timestamp() WHERE id = $3 RETURNING updated_at',
          [t.to, stopReason, row.id],
        );
        await c.query('INSERT INTO events (goal, at, from_state, to_state, event, detail) VALUES ($1, $2, $3, $4, $5, $6)', [
          row.id,
          rows[0]!.updated_at,
          row.state,
          t.to,
          t.event,
          pgText(t.detail ?? null),
        ]);
        row = { ...row, state: t.to, stop_reason: stopReason };
      }
      for (const t of change.tasks ?? []) await this.patchTask(c, key, row.id, t.taskId, t.patch);
      if (change.counters) await this.addCountersOn(c, key, change.counters);
      if (change.meta) await this.mergeMeta(c, key, change.meta);
      for (const e of change.effects ?? []) {
        await c.query('INSERT INTO effects (goal, kind, payload_json, created_at) VALUES ($1, $2, $3, clock_timestamp())', [row.id, e.kind, toJsonb(e.payload ?? null)]);
      }
    });
  }

  async listTasks(key: GoalKey): Promise<TaskRecord[]> {
    const goal = await this.requireGoalId(key);
    const { rows } = await this.pool.query<TaskRow>('SELECT * FROM tasks WHERE goal = $1 ORDER BY position', [goal]);
    return rows.map(toTask);
  }

  async updateTask(key: GoalKey, taskId: string, patch: TaskPatch): Promise<void> {
    await this.patchTask(this.pool, key, await this.requireGoalId(key), taskId, patch);
  }

  async recordAttempt(key: GoalKey, a: AttemptRecord): Promise<void> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO attempts (goal, task_id, attempt, phase, passed, exit_code, output, log_path, duration_ms, at)
       SELECT id, $3, $4, $5, $6, $7, $8, $9, $10, clock_timestamp() FROM goals WHERE repo = $1 AND goal_id = $2`,
      [key.repo, key.goalId, a.taskId, a.attempt, a.phase, a.passed, a.exitCode, pgText(trimForLedger(a.output)), a.logPath ?? null, Math.round(a.durationMs)],
    );
    if (rowCount === 0) throw unknownGoal(key);
  }

  async listAttempts(key: GoalKey, taskId?: string): Promise<AttemptRecord[]> {
    const goal = await this.requireGoalId(key);
    const { rows } = taskId
      ? await this.pool.query<AttemptRow>('SELECT * FROM attempts WHERE goal = $1 AND task_id = $2 ORDER BY id', [goal, taskId])
      : await this.pool.query<AttemptRow>('SELECT * FROM attempts WHERE goal = $1 ORDER BY id', [goal]);
    return rows.map(toAttempt);
  }

  async appendAttemptEntry(key: GoalKey, taskId: string, attempt: number, entry: AttemptEntry): Promise<void> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO attempt_entries (goal, task_id, attempt, at, entry_json)
       SELECT id, $3, $4, clock_timestamp(), $5 FROM goals WHERE repo = $1 AND goal_id = $2`,
      [key.repo, key.goalId, pgText(taskId), attempt, toJsonb(entry)],
    );
    if (rowCount === 0) throw unknownGoal(key);
  }

  async listAttemptEntries(key: GoalKey, filter: AttemptLogFilter = {}): Promise<AttemptLogEntry[]> {
    const goal = await this.requireGoalId(key);
    const { rows } = await this.pool.query<AttemptEntryRow>(
      `SELECT * FROM attempt_entries WHERE goal = $1 AND seq > $2
         AND ($3::text IS NULL OR task_id = $3) AND ($4::int IS NULL OR attempt = $4) ORDER BY seq`,
      [goal, filter.afterSeq ?? 0, filter.taskId ?? null, filter.attempt ?? null],
    );
    return rows.map(toAttemptLogEntry);
  }

  async listEvents(key: GoalKey): Promise<EventRecord[]> {
    const goal = await this.requireGoalId(key);
    const { rows } = await this.pool.query<EventRow>('SELECT * FROM events WHERE goal = $1 ORDER BY id', [goal]);
    return rows.map(toEvent);
  }

  async addCounters(key: GoalKey, delta: CounterDelta): Promise<Counters> {
    return this.addCountersOn(this.pool, key, delta);
  }

  async setControl(key: GoalKey, control: ControlRequest | null): Promise<void> {
    const { rowCount } = await this.pool.query('UPDATE goals SET control = $3, updated_at = clock_timestamp() WHERE repo = $1 AND goal_id = $2', [
      key.repo,
      key.goalId,
      control,
    ]);
    if (rowCount === 0) throw unknownGoal(key);
  }


  async setMeta(key: GoalKey, patch: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.mergeMeta(this.pool, key, patch);
  }

  async updateMeta(key: GoalKey, update: (meta: Record<string, unknown>) => Record<string, unknown>): Promise<Record<string, unknown>> {
    return withTransaction(this.pool, async (c) => {
      // Locked: a concurrent update waits here and reads what this one wrote.
      const row = await this.goalRow(c, key, 'FOR UPDATE');
      if (!row) throw unknownGoal(key);
      return this.mergeMeta(c, key, update(JSON.parse(row.meta_json) as Record<string, unknown>));
    });
  }

  async pendingEffects(filter: { key?: GoalKey; settledForMs?: number } = {}): Promise<PendingEffect[]> {
    const where = ['e.done_at IS NULL'];
    const args: unknown[] = [];
    if (filter.key) {
      args.push(filter.key.repo, filter.key.goalId);
      where.push('g.repo = $1 AND g.goal_id = $2');
    }
    if (filter.settledForMs !== undefined) {
      args.push(filter.settledForMs);
      where.push(`e.claimed_until <= clock_timestamp() AND e.created_at <= clock_timestamp() - $${args.length} * interval '1 millisecond'`);
    }
    const { rows } = await this.pool.query<EffectRow>(
      `SELECT e.id, e.kind, e.payload_json, e.created_at, e.attempts, e.last_error, g.repo, g.goal_id
       FROM effects e JOIN goals g ON g.id = e.goal WHERE ${where.join(' AND ')} ORDER BY e.id`,
      args,
    );
    return rows.map(toEffect);
  }

  async claimEffect(id: number, holder: string, ttlMs: number): Promise<number> {
    const { rows } = await this.pool.query<{ attempts: number }>(
      `UPDATE effects SET claimed_by = $2, claimed_until = clock_timestamp() + $3 * interval '1 millisecond', attempts = attempts + 1
       WHERE id = $1 AND done_at IS NULL AND claimed_until <= clock_timestamp() RETURNING attempts`,
      [id, holder, ttlMs],
    );
    return rows[0]?.attempts ?? 0;
  }

  async giveUpEffect(id: number, holder: string, error: string): Promise<void> {
    await this.pool.query(
      "UPDATE effects SET last_error = $3, done_at = clock_timestamp(), given_up_at = clock_timestamp(), claimed_until = 'epoch' WHERE id = $1 AND claimed_by = $2 AND done_at IS NULL",
      [id, holder, pgText(trimForLedger(error))],
    );
  }

  async givenUpEffects(filter: { key?: GoalKey } = {}): Promise<GivenUpEffect[]> {
    const where = ['e.given_up_at IS NOT NULL'];
    const args: unknown[] = [];
    if (filter.key) {
      args.push(filter.key.repo, filter.key.goalId);
      where.push('g.repo = $1 AND g.goal_id = $2');
    }
    const { rows } = await this.pool.query<EffectRow>(
      `SELECT e.id, e.kind, e.payload_json, e.created_at, e.attempts, e.last_error, e.given_up_at, g.repo, g.goal_id
       FROM effects e JOIN goals g ON g.id = e.goal WHERE ${where.join(' AND ')} ORDER BY e.id`,
      args,
    );
    return rows.map(toGivenUpEffect);
  }

  async completeEffect(id: number): Promise<void> {
    await this.pool.query("UPDATE effects SET done_at = clock_timestamp(), claimed_until = 'epoch' WHERE id = $1", [id]);
  }

  async failEffect(id: number, holder: string, error: string, retryInMs: number): Promise<void> {
    await this.pool.query(
      "UPDATE effects SET last_error = $3, claimed_until = clock_timestamp() + $4 * interval '1 millisecond' WHERE id = $1 AND claimed_by = $2 AND done_at IS NULL",
      [id, holder, pgText(trimForLedger(error)), retryInMs],
    );
  }

  async recordDelivery(id: string, event?: unknown): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'INSERT INTO deliveries (id, received_at, event_json) VALUES ($1, clock_timestamp(), $2) ON CONFLICT (id) DO NOTHING',
      [id, event === undefined ? null : JSON.stringify(event)],
    );
    return rowCount === 1;
  }

  async markDeliveryHandled(id: string): Promise<void> {
    await this.pool.query('UPDATE deliveries SET handled_at = clock_timestamp() WHERE id = $1 AND handled_at IS NULL', [id]);
  }

  async unhandledDeliveries(): Promise<InboxEntry[]> {
    const { rows } = await this.pool.query<DeliveryRow>(
      'SELECT id, event_json, received_at FROM deliveries WHERE event_json IS NOT NULL AND handled_at IS NULL ORDER BY received_at, id',
    );
    return rows.map(toInboxEntry);
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.leases.acquire(name, holder, ttlMs);
  }

  async renewLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.leases.renew(name, holder, ttlMs);
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.leases.release(name, holder);
  }

  async listLeases(): Promise<LeaseRecord[]> {
    return this.leases.list();
  }

  async prune(opts: { expiredLeasesMs: number; handledDeliveriesMs: number }): Promise<{ leases: number; deliveries: number; effects: number }> {
    const leases = await this.pool.query("DELETE FROM leases WHERE expires_at < clock_timestamp() - $1 * interval '1 millisecond'", [opts.expiredLeasesMs]);
    const deliveries = await this.pool.query(
      "DELETE FROM deliveries WHERE handled_at IS NOT NULL AND received_at < clock_timestamp() - $1 * interval '1 millisecond'",
      [opts.handledDeliveriesMs],
    );
    // A given-up effect stays: it is what `status` and the status comment report.
    const effects = await this.pool.query("DELETE FROM effects WHERE given_up_at IS NULL AND done_at < clock_timestamp() - $1 * interval '1 millisecond'", [opts.handledDeliveriesMs]);
    return { leases: leases.rowCount ?? 0, deliveries: deliveries.rowCount ?? 0, effects: effects.rowCount ?? 0 };
  }

  async close(): Promise<void> {
    if (!this.pool.ended) await this.pool.end();
  }

  private async mergeMeta(db: pg.Pool | pg.PoolClient, key: GoalKey, patch: Record<string, unknown>): Promise<Record<string, unknown>> {
    // One statement: concurrent patches to different keys both land.
    const set: Record<string, unknown> = {};
    const drop: string[] = [];
    for (const [k, v] of Object.entries(patch)) {
      if (v === null || v === undefined) drop.push(k);
      else set[k] = v;
    }
    const { rows } = await db.query<{ meta_json: string }>(
      `UPDATE goals SET meta_json = (meta_json || $3::jsonb) - $4::text[], updated_at = clock_timestamp()
       WHERE repo = $1 AND goal_id = $2 RETURNING meta_json`,
      [key.repo, key.goalId, toJsonb(set), drop],
    );
    if (!rows[0]) throw unknownGoal(key);
    return JSON.parse(rows[0].meta_json) as Record<string, unknown>;
  }

  private async patchTask(db: pg.Pool | pg.PoolClient, key: GoalKey, goal: number, taskId: string, patch: TaskPatch): Promise<void> {
    const sets: string[] = [];
    const values: unknown[] = [goal, taskId];
    for (const [k, v] of Object.entries(patch)) {
      const col = TASK_COLUMNS[k];
      if (!col || v === undefined) continue;
      values.push(k === 'lastError' && typeof v === 'string' ? pgText(trimForLedger(v)) : v);
      sets.push(`${col} = $${values.length}`);
    }
    if (sets.length === 0) return;
    const { rowCount } = await db.query(`UPDATE tasks SET ${sets.join(', ')}, updated_at = clock_timestamp() WHERE goal = $1 AND task_id = $2`, values);
    if (rowCount === 0) throw new Error(`ledger: goal ${key.goalId} has no task "${taskId}"`);
  }

  private async addCountersOn(db: pg.Pool | pg.PoolClient, key: GoalKey, delta: CounterDelta): Promise<Counters> {
    const { rows } = await db.query<GoalRow>(
      `UPDATE goals SET iterations = iterations + $3, errors = errors + $4, errors_recovered = errors_recovered + $5,
         input_tokens = input_tokens + $6, output_tokens = output_tokens + $7, cache_read_tokens = cache_read_tokens + $8,
         cache_write_tokens = cache_write_tokens + $9, cost_usd = cost_usd + $10, updated_at = clock_timestamp()
       WHERE repo = $1 AND goal_id = $2 RETURNING *`,
      [key.repo, key.goalId, ...counterDeltas(delta)],
    );
    if (!rows[0]) throw unknownGoal(key);
    return toGoal(rows[0]).counters;
  }

  private async goalRow(db: pg.Pool | pg.PoolClient, key: GoalKey, lock = ''): Promise<GoalRow | undefined> {
    const { rows } = await db.query<GoalRow>(`SELECT * FROM goals WHERE repo = $1 AND goal_id = $2 ${lock}`, [key.repo, key.goalId]);
    return rows[0];
  }

  private async requireGoalId(key: GoalKey): Promise<number> {
    const { rows } = await this.pool.query<{ id: number }>('SELECT id FROM goals WHERE repo = $1 AND goal_id = $2', [key.repo, key.goalId]);
    if (!rows[0]) throw unknownGoal(key);
    return rows[0].id;
  }
}
