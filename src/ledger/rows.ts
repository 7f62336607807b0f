import type { GoalSpec } from '../goal/schema.js';
import type { GoalState, TaskStatus } from '../goal/states.js';
import type { AttemptEntry, AttemptLogEntry } from '../ports/attempt-log.js';
import type { AttemptRecord, ControlRequest, EventRecord, GoalRecord, TaskRecord } from '../ports/goal-ledger.js';
import type { InboxEntry } from '../ports/inbox.js';
import type { GivenUpEffect, PendingEffect } from '../ports/outbox.js';

/**
 * Rows as both stores read them (PostgreSQL's pool returns timestamps as ISO text and JSON as
 * text, see postgres/pool.ts), so one mapping serves SQLite and PostgreSQL. Flags are 0/1 in
 * SQLite and booleans in PostgreSQL.
 */
export interface GoalRow {
  id: number;
  repo: string;
  goal_id: string;
  objective: string;
  spec_json: string;
  state: string;
  stop_reason: string | null;
  branch: string;
  priority: string;
  control: string | null;
  iterations: number;
  errors: number;
  errors_recovered: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd: number;
  created_at: string;
  updated_at: string;
  meta_json: string;
}

export interface TaskRow {
  task_id: string;
  position: number;
  title: string;
  status: string;
  attempts: number;
  checkpoint_sha: string | null;
  last_error: string | null;
  approved: number | boolean;
}

export interface AttemptRow {
  task_id: string;
  attempt: number;
  phase: string;
  passed: number | boolean;
  exit_code: number | null;
  output: string;
  log_path: string | null;
  duration_ms: number;
}

export interface EventRow {
  at: string;
  from_state: string | null;
  to_state: string;
  event: string;
  detail: string | null;
}

export interface DeliveryRow {
  id: string;
  event_json: string;
  received_at: string;
}

/** Task fields `updateTask` may change, by column. */
export const TASK_COLUMNS: Record<string, string> = {
  status: 'status',
  attempts: 'attempts',
  checkpointSha: 'checkpoint_sha',
  lastError: 'last_error',
  approved: 'approved',
};

/** The counter increments `addCounters` applies, in the column order of its UPDATE. */
export function counterDeltas(delta: {
  iterations?: number;
  errors?: number;
  errors_recovered?: number;
  tokens?: { input?: number; output?: number; cache_read?: number; cache_write?: number };
  cost_usd?: number;
}): number[] {
  return [
    delta.iterations ?? 0,
    delta.errors ?? 0,
    delta.errors_recovered ?? 0,
    delta.tokens?.input ?? 0,
    delta.tokens?.output ?? 0,
    delta.tokens?.cache_read ?? 0,
    delta.tokens?.cache_write ?? 0,
    delta.cost_usd ?? 0,
  ];
}

export const unknownGoal = (key: { repo: string; goalId: string }) => new Error(`ledger: unknown goal ${key.goalId} in ${key.repo}`);

export function toGoal(r: GoalRow): GoalRecord {
  return {
    repo: r.repo,
    goalId: r.goal_id,
    objective: r.objective,
    spec: JSON.parse(r.spec_json) as GoalSpec,
    state: r.state as GoalState,
    stopReason: r.stop_reason,
    branch: r.branch,
    priority: r.priority,
    control: r.control as ControlRequest | null,
    meta: JSON.parse(r.meta_json) as Record<string, unknown>,
    counters: {
      iterations: r.iterations,
      errors: r.errors,
      errors_recovered: r.errors_recovered,
      tokens: { input: r.input_tokens, output: r.output_tokens, cache_read: r.cache_read_tokens, cache_write: r.cache_write_tokens },
      cost_usd: r.cost_usd,
    },
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function toTask(r: TaskRow): TaskRecord {
  return {
    taskId: r.task_id,
    position: r.position,
    title: r.title,
    status: r.status as TaskStatus,
    attempts: r.attempts,
    checkpointSha: r.checkpoint_sha,
    lastError: r.last_error,
    approved: Boolean(r.approved),
  };
}

export function toAttempt(r: AttemptRow): AttemptRecord {
  return {
    taskId: r.task_id,
    attempt: r.attempt,
    phase: r.phase,
    passed: Boolean(r.passed),
    exitCode: r.exit_code,
    output: r.output,
    ...(r.log_path ? { logPath: r.log_path } : {}),
    durationMs: r.duration_ms,
  };
}

export function toEvent(r: EventRow): EventRecord {
  return { at: r.at, from: r.from_state as GoalState | null, to: r.to_state as GoalState, event: r.event, detail: r.detail };
}

export function toInboxEntry(r: DeliveryRow): InboxEntry {
  return { id: r.id, event: JSON.parse(r.event_json) as unknown, receivedAt: r.received_at };
}

/** An outbox row joined with its goal's key; SQLite keeps times as epoch milliseconds, PostgreSQL as timestamps. */
export interface EffectRow {
  id: number;
  repo: string;
  goal_id: string;
  kind: string;
  payload_json: string;
  created_at: number | string;
  attempts: number;
  last_error: string | null;
  given_up_at?: number | string | null;
}

/** A time as ISO 8601 text: SQLite keeps some as epoch milliseconds, PostgreSQL returns ISO text. */
export const timeText = (t: number | string): string => (typeof t === 'number' ? new Date(t).toISOString() : t);

export function toGivenUpEffect(r: EffectRow): GivenUpEffect {
  return { ...toEffect(r), givenUpAt: timeText(r.given_up_at ?? 0) };
}

export function toEffect(r: EffectRow): PendingEffect {
  return {
    id: r.id,
    key: { repo: r.repo, goalId: r.goal_id },
    kind: r.kind,
    payload: JSON.parse(r.payload_json) as unknown,
    createdAt: timeText(r.created_at),
    attempts: r.attempts,
    lastError: r.last_error,
  };
}

export interface AttemptEntryRow {
  seq: number | string;
  task_id: string;
  attempt: number;
  at: string | Date;
  entry_json: string | AttemptEntry;
}

export function toAttemptLogEntry(r: AttemptEntryRow): AttemptLogEntry {
  return {
    seq: Number(r.seq),
    at: r.at instanceof Date ? r.at.toISOString() : r.at,
    taskId: r.task_id,
    attempt: r.attempt,
    entry: typeof r.entry_json === 'string' ? (JSON.parse(r.entry_json) as AttemptEntry) : r.entry_json,
  };
}
