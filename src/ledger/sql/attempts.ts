import type { AttemptEntry, AttemptLogEntry, AttemptLogFilter } from '../../ports/attempt-log.js';
import type { AttemptRecord, GoalKey } from '../../ports/goal-ledger.js';
import { type AttemptEntryRow, type AttemptRow, toAttempt, toAttemptLogEntry, unknownGoal } from '../rows.js';
import { trimForLedger } from '../trim.js';
import { requireGoalId } from './goals.js';
import { count, type Program, rows } from './program.js';
import { flag, isoTime, jsonb, sql, text } from './statement.js';

/** What attempts did: their results (GoalLedger) and their running record (ports/attempt-log.ts), as programs for either store. */

export function* recordAttempt(key: GoalKey, a: AttemptRecord): Program<void> {
  const added = yield* count(
    sql`INSERT INTO attempts (goal, task_id, attempt, phase, passed, exit_code, output, log_path, duration_ms, at)
        SELECT id, ${a.taskId}, ${a.attempt}, ${a.phase}, ${flag(a.passed)}, ${a.exitCode}, ${text(trimForLedger(a.output))}, ${a.logPath ?? null},
          ${Math.round(a.durationMs)}, ${isoTime()}
        FROM goals WHERE repo = ${key.repo} AND goal_id = ${key.goalId}`,
  );
  if (added === 0) throw unknownGoal(key);
}

export function* listAttempts(key: GoalKey, taskId?: string): Program<AttemptRecord[]> {
  const goal = yield* requireGoalId(key);
  const ofTask = taskId ? sql`AND task_id = ${taskId}` : sql``;
  return (yield* rows<AttemptRow>(sql`SELECT * FROM attempts WHERE goal = ${goal} ${ofTask} ORDER BY id`)).map(toAttempt);
}

export function* appendAttemptEntry(key: GoalKey, taskId: string, attempt: number, entry: AttemptEntry): Program<void> {
  const added = yield* count(
    sql`INSERT INTO attempt_entries (goal, task_id, attempt, at, entry_json)
        SELECT id, ${text(taskId)}, ${attempt}, ${isoTime()}, ${jsonb(entry)} FROM goals WHERE repo = ${key.repo} AND goal_id = ${key.goalId}`,
  );
  if (added === 0) throw unknownGoal(key);
}

export function* listAttemptEntries(key: GoalKey, filter: AttemptLogFilter): Program<AttemptLogEntry[]> {
  const goal = yield* requireGoalId(key);
  const ofTask = filter.taskId !== undefined && filter.taskId !== null ? sql`AND task_id = ${filter.taskId}` : sql``;
  const ofAttempt = filter.attempt !== undefined && filter.attempt !== null ? sql`AND attempt = ${filter.attempt}` : sql``;
  const found = yield* rows<AttemptEntryRow>(sql`SELECT * FROM attempt_entries WHERE goal = ${goal} AND seq > ${filter.afterSeq ?? 0} ${ofTask} ${ofAttempt} ORDER BY seq`);
  return found.map(toAttemptLogEntry);
}
