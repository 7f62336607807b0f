import type { GoalSpec } from '../../goal/schema.js';
import type { GoalState } from '../../goal/states.js';
import type { ControlRequest, CounterDelta, Counters, EventRecord, GoalChange, GoalKey, GoalRecord, TaskPatch, TaskRecord } from '../../ports/goal-ledger.js';
import { counterDeltas, type EventRow, type GoalRow, TASK_COLUMNS, type TaskRow, toEvent, toGoal, toTask, unknownGoal } from '../rows.js';
import { trimForLedger } from '../trim.js';
import { count, firstRow, type Program, rows } from './program.js';
import { epochTime, FOR_UPDATE, flag, identifier, isoTime, join, jsonb, list, type Sql, sql, text } from './statement.js';

/** The goal ledger's operations (ports/goal-ledger.ts), as programs for either store. */

/** The goal's row; `lock` (in a transaction) holds it until the transaction ends. */
export function* goalRow(key: GoalKey, lock = false): Program<GoalRow | undefined> {
  return yield* firstRow<GoalRow>(sql`SELECT * FROM goals WHERE repo = ${key.repo} AND goal_id = ${key.goalId} ${lock ? FOR_UPDATE : sql``}`);
}

export function* getGoal(key: GoalKey): Program<GoalRecord | undefined> {
  const row = yield* goalRow(key);
  return row && toGoal(row);
}

export function* requireGoal(key: GoalKey, lock = false): Program<GoalRow> {
  const row = yield* goalRow(key, lock);
  if (!row) throw unknownGoal(key);
  return row;
}

export function* requireGoalId(key: GoalKey): Program<number> {
  const row = yield* firstRow<{ id: number }>(sql`SELECT id FROM goals WHERE repo = ${key.repo} AND goal_id = ${key.goalId}`);
  if (!row) throw unknownGoal(key);
  return row.id;
}

/** Run in a transaction. */
export function* upsertGoal(key: GoalKey, input: { spec: GoalSpec; branch: string; priority?: string }): Program<GoalRecord> {
  const { spec } = input;
  const row = (yield* firstRow<GoalRow>(
    sql`INSERT INTO goals (repo, goal_id, objective, spec_json, state, branch, priority, created_at, updated_at)
        VALUES (${key.repo}, ${key.goalId}, ${text(spec.objective)}, ${JSON.stringify(spec)}, 'INITIALIZING', ${input.branch}, ${input.priority ?? 'P2'}, ${isoTime()}, ${isoTime()})
        ON CONFLICT (repo, goal_id) DO UPDATE SET objective = excluded.objective, spec_json = excluded.spec_json,
          branch = excluded.branch, priority = COALESCE(${input.priority ?? null}, goals.priority), updated_at = excluded.updated_at
        RETURNING *`,
  ))!;
  const ids = spec.tasks.map((t) => t.id);
  yield* count(sql`DELETE FROM tasks WHERE goal = ${row.id} ${ids.length > 0 ? sql`AND task_id NOT IN ${list(ids)}` : sql``}`);
  for (const [position, task] of spec.tasks.entries()) {
    yield* count(
      sql`INSERT INTO tasks (goal, task_id, position, title, status, updated_at) VALUES (${row.id}, ${task.id}, ${position}, ${text(task.title)}, 'pending', ${isoTime()})
          ON CONFLICT (goal, task_id) DO UPDATE SET position = excluded.position, title = excluded.title`,
    );
  }
  return toGoal(row);
}

export function* listGoals(filter: { exceptStates?: Iterable<GoalState> }): Program<GoalRecord[]> {
  const except = [...(filter.exceptStates ?? [])];
  const where = except.length > 0 ? sql`WHERE state NOT IN ${list(except)}` : sql``;
  return (yield* rows<GoalRow>(sql`SELECT * FROM goals ${where} ORDER BY updated_at DESC, id DESC`)).map(toGoal);
}

/** Run in a transaction: the goal is locked, so each event's `from` is the state it replaced, even under concurrent changes. */
export function* recordChange(key: GoalKey, change: GoalChange): Program<void> {
  let row = yield* requireGoal(key, true);
  for (const t of change.transitions ?? []) {
    const stopReason = t.stopReason === undefined ? row.stop_reason : t.stopReason;
    const [{ updated_at: at }] = (yield* rows<{ updated_at: string }>(
      sql`UPDATE goals SET state = ${t.to}, stop_reason = ${text(stopReason)}, updated_at = ${isoTime()} WHERE id = ${row.id} RETURNING updated_at`,
    )) as [{ updated_at: string }];
    yield* count(sql`INSERT INTO events (goal, at, from_state, to_state, event, detail) VALUES (${row.id}, ${at}, ${row.state}, ${t.to}, ${t.event}, ${text(t.detail ?? null)})`);
    row = { ...row, state: t.to, stop_reason: stopReason };
  }
  for (const t of change.tasks ?? []) yield* patchTask(key, row.id, t.taskId, t.patch);
  if (change.counters) yield* addCounters(key, change.counters);
  if (change.meta) yield* mergeMeta(key, change.meta);
  for (const e of change.effects ?? []) {
    yield* count(sql`INSERT INTO effects (goal, kind, payload_json, created_at) VALUES (${row.id}, ${e.kind}, ${jsonb(e.payload ?? null)}, ${epochTime()})`);
  }
}
export function* listTasks(key: GoalKey): Program<TaskRecord[]> {
  const goal = yield* requireGoalId(key);
  return (yield* rows<TaskRow>(sql`SELECT * FROM tasks WHERE goal = ${goal} ORDER BY position`)).map(toTask);
}

export function* updateTask(key: GoalKey, taskId: string, patch: TaskPatch): Program<void> {
  yield* patchTask(key, yield* requireGoalId(key), taskId, patch);
}

function* patchTask(key: GoalKey, goal: number, taskId: string, patch: TaskPatch): Program<void> {
  const sets: Sql[] = [];
  for (const [k, v] of Object.entries(patch)) {
    const col = TASK_COLUMNS[k];
    if (!col || v === undefined) continue;
    const value = typeof v === 'boolean' ? flag(v) : k === 'lastError' && typeof v === 'string' ? text(trimForLedger(v)) : v;
    sets.push(sql`${identifier(col)} = ${value}`); // col is one of TASK_COLUMNS, never caller text
  }
  if (sets.length === 0) return;
  const changed = yield* count(sql`UPDATE tasks SET ${join(sets, ', ')}, updated_at = ${isoTime()} WHERE goal = ${goal} AND task_id = ${taskId}`);
  if (changed === 0) throw new Error(`ledger: goal ${key.goalId} has no task "${taskId}"`);
}

/** Adds to the goal's counters and returns the new totals. */
export function* addCounters(key: GoalKey, delta: CounterDelta): Program<Counters> {
  const [iterations, errors, recovered, input, output, cacheRead, cacheWrite, cost] = counterDeltas(delta);
  const row = yield* firstRow<GoalRow>(
    sql`UPDATE goals SET iterations = iterations + ${iterations}, errors = errors + ${errors}, errors_recovered = errors_recovered + ${recovered},
          input_tokens = input_tokens + ${input}, output_tokens = output_tokens + ${output}, cache_read_tokens = cache_read_tokens + ${cacheRead},
          cache_write_tokens = cache_write_tokens + ${cacheWrite}, cost_usd = cost_usd + ${cost}, updated_at = ${isoTime()}
        WHERE repo = ${key.repo} AND goal_id = ${key.goalId} RETURNING *`,
  );
  if (!row) throw unknownGoal(key);
  return toGoal(row).counters;
}

export function* setControl(key: GoalKey, control: ControlRequest | null): Program<void> {
  const changed = yield* count(sql`UPDATE goals SET control = ${control}, updated_at = ${isoTime()} WHERE repo = ${key.repo} AND goal_id = ${key.goalId}`);
  if (changed === 0) throw unknownGoal(key);
}

/**
 * Run in a transaction: reads the goal's meta locked, merges what `update` makes of it (a key set
 * to null is removed) and returns the meta stored. A concurrent merge waits, then reads this one's.
 */
export function* mergeMeta(key: GoalKey, update: Record<string, unknown> | ((meta: Record<string, unknown>) => Record<string, unknown>)): Program<Record<string, unknown>> {
  const row = yield* requireGoal(key, true);
  const meta = JSON.parse(row.meta_json) as Record<string, unknown>;
  const patch = typeof update === 'function' ? update(JSON.parse(row.meta_json) as Record<string, unknown>) : update;
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === undefined) delete meta[k];
    else meta[k] = v;
  }
  const [stored] = yield* rows<{ meta_json: string }>(sql`UPDATE goals SET meta_json = ${jsonb(meta)}, updated_at = ${isoTime()} WHERE id = ${row.id} RETURNING meta_json`);
  return JSON.parse(stored!.meta_json) as Record<string, unknown>;
}

export function* listEvents(key: GoalKey): Program<EventRecord[]> {
  const goal = yield* requireGoalId(key);
  return (yield* rows<EventRow>(sql`SELECT * FROM events WHERE goal = ${goal} ORDER BY id`)).map(toEvent);
}
