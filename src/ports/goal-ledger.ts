import type { GoalSpec } from '../goal/schema.js';
import type { GoalState, TaskStatus } from '../goal/states.js';
import type { Usage } from '../goal/usage.js';
import type { AttemptEntry } from './attempt-log.js';
import type { EffectInput } from './outbox.js';

/** Identity of a goal: the same goal id may exist in several repositories. */
export interface GoalKey {
  repo: string;
  goalId: string;
}

export interface Counters {
  iterations: number;
  errors: number;
  errors_recovered: number;
  tokens: Usage;
  cost_usd: number;
}

export interface GoalRecord extends GoalKey {
  objective: string;
  spec: GoalSpec;
  state: GoalState;
  stopReason: string | null;
  branch: string;
  priority: string;
  counters: Counters;
  /** A pending human request, read by the running loop between steps. */
  control: ControlRequest | null;
  /** Forge-specific facts (issue number, status comment id, PR number…), merged by `setMeta`. */
  meta: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export type ControlRequest = 'pause' | 'stop';

export interface TaskRecord {
  taskId: string;
  position: number;
  title: string;
  status: TaskStatus;
  attempts: number;
  checkpointSha: string | null;
  lastError: string | null;
  approved: boolean;
}

export interface AttemptRecord {
  taskId: string;
  attempt: number;
  /** `run`, `agent`, `verify`, `checkpoint` or `gate`: where the attempt ended. */
  phase: string;
  passed: boolean;
  exitCode: number | null;
  output: string;
  logPath?: string;
  durationMs: number;
}

export interface EventRecord {
  at: string;
  from: GoalState | null;
  to: GoalState;
  event: string;
  detail: string | null;
}

export type TaskPatch = Partial<Omit<TaskRecord, 'taskId' | 'position' | 'title'>>;
export type CounterDelta = Partial<Omit<Counters, 'tokens'>> & { tokens?: Partial<Usage> };

/** One step of a goal, written at once (one transaction): its state changes, task changes, counters, and the effects they imply. */
export interface GoalChange {
  /** In order; the goal's state is the last one's `to`. */
  transitions?: Array<{ to: GoalState; event: string; detail?: string | null; stopReason?: string | null }>;
  tasks?: Array<{ taskId: string; patch: TaskPatch }>;
  counters?: CounterDelta;
  /** Shallow-merged into the goal's meta, as `setMeta` does. */
  meta?: Record<string, unknown>;
  /** Recorded in the outbox, to be performed after the write (see ports/outbox.ts). */
  effects?: EffectInput[];
  /** What the step's effects did, written in the same transaction (recordAttempt). */
  attempts?: AttemptRecord[];
  /** The attempt record's entries the step's effects made, in order (AttemptLog.appendAttemptEntry). */
  attemptEntries?: Array<{ taskId: string; attempt: number; entry: AttemptEntry }>;
}

/** Durable index of goals. Git holds the truth about finished work; this holds everything else. */
export interface GoalLedger {
  /** Creates the goal or refreshes its spec; keeps counters and history. */
  upsertGoal(key: GoalKey, input: { spec: GoalSpec; branch: string; priority?: string }): Promise<GoalRecord>;
  getGoal(key: GoalKey): Promise<GoalRecord | undefined>;
  /** Newest first; `exceptStates` leaves out goals in those states (e.g. the resting ones). */
  listGoals(filter?: { exceptStates?: Iterable<GoalState> }): Promise<GoalRecord[]>;
  setState(key: GoalKey, state: GoalState, event: string, detail?: string | null, stopReason?: string | null): Promise<void>;
  /** Writes a whole step in one transaction: all of it lands, or none of it. */
  recordChange(key: GoalKey, change: GoalChange): Promise<void>;
  listTasks(key: GoalKey): Promise<TaskRecord[]>;
  updateTask(key: GoalKey, taskId: string, patch: TaskPatch): Promise<void>;
  recordAttempt(key: GoalKey, attempt: AttemptRecord): Promise<void>;
  listAttempts(key: GoalKey, taskId?: string): Promise<AttemptRecord[]>;
  listEvents(key: GoalKey): Promise<EventRecord[]>;
  /** Adds to the goal's counters and returns the new totals. */
  addCounters(key: GoalKey, delta: CounterDelta): Promise<Counters>;
  setControl(key: GoalKey, control: ControlRequest | null): Promise<void>;
  /** Shallow-merges into the goal's meta; a key set to null is removed. */
  setMeta(key: GoalKey, patch: Record<string, unknown>): Promise<Record<string, unknown>>;
  /**
   * Reads the goal's meta and merges the patch `update` makes of it (as `setMeta`), in one
   * transaction with the goal locked: a change computed from a key (append to a list, take from
   * it) loses no concurrent one. `update` must be pure (it may run again); returns the new meta.
   */
  updateMeta(key: GoalKey, update: (meta: Record<string, unknown>) => Record<string, unknown>): Promise<Record<string, unknown>>;
}
