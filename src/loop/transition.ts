import { riskExceeds, type LoopLimits } from '../goal/limits.js';
import { nextReadyTask } from '../goal/dag.js';
import type { Escalation } from '../goal/escalation.js';
import type { Risk } from '../goal/schema.js';
import { isSettled, RESTING_STATES, type GoalState, type TaskStatus } from '../goal/states.js';

/** What the pure controller knows about one task. */
export interface TaskView {
  id: string;
  title: string;
  dependencies: string[];
  risk: Risk;
  requiresApproval: boolean;
  approved: boolean;
  maxRetries: number;
  status: TaskStatus;
  /** Attempts over the goal's whole life (numbering for GOAL_ATTEMPT and trailers). */
  attempts: number;
  /** Attempts in this run; a resume or `/goal retry` starts them again at zero. */
  runAttempts: number;
  /** Failed attempts in this run, for `errors_recovered` once the task passes. */
  runFailures: number;
  checkpointSha?: string;
  /** Order in which checkpoints landed on the branch (resumed ones first, in git order). */
  checkpointSeq?: number;
  lastError?: string;
}

export interface LoopCounters {
  iterations: number;
  consecutiveErrors: number;
  errors: number;
  errorsRecovered: number;
  costUsd: number;
}

export interface LoopState {
  phase: GoalState;
  tasks: TaskView[];
  /** The task being worked, when the phase is about one. */
  currentTaskId?: string;
  counters: LoopCounters;
  limits: LoopLimits;
  startedAtMs: number;
  stopReason?: string;
  escalation?: Escalation;
}

export type ExecutionFailureKind = 'task' | 'infra' | 'budget';

export type LoopEvent =
  | { type: 'start'; at: number; checkpoints: Array<{ taskId: string; sha: string }>; setupFailure?: string }
  | { type: 'executed'; at: number; ok: true; costUsd?: number }
  | { type: 'executed'; at: number; ok: false; kind: ExecutionFailureKind; error: string; costUsd?: number }
  | { type: 'verified'; at: number; passed: boolean; output: string }
  | { type: 'checkpointed'; at: number; sha: string }
  | { type: 'checkpoint_refused'; at: number; reason: string }
  | { type: 'gate_done'; at: number; passed: boolean; output: string }
  | { type: 'infra_error'; at: number; error: string }
  | { type: 'interrupted'; at: number; request: 'pause' | 'stop'; reason: string };

export type Effect =
  | { type: 'execute'; taskId: string; attempt: number; previousFailure?: string }
  | { type: 'verify'; taskId: string; attempt: number }
  | { type: 'checkpoint'; taskId: string; attempt: number }
  /** `bestEffort`: the goal is coming to rest; a failure is logged, not turned into an event. */
  | { type: 'rollback'; bestEffort?: boolean }
  | { type: 'final_gate' }
  | { type: 'checkpointed'; taskId: string; sha: string }
  | { type: 'escalate'; escalation: Escalation }
  | { type: 'request_approval'; taskIds: string[] }
  | { type: 'finish' };

export interface Transition {
  from: GoalState;
  to: GoalState;
  event: string;
  detail?: string;
}

export interface Decision {
  state: LoopState;
  transitions: Transition[];
  effects: Effect[];
}

export const FINAL_GATE_TASK = 'final-gate';
/** Pseudo task id for a failure of the repo's `setup` commands. */
export const SETUP_TASK = 'setup';

/**
 * The loop's brain: given the state and what just happened, return the next state and the
 * effects to perform. Pure: no I/O, no clock; adapters perform the effects and report back.
 */
export function decide(state: LoopState, event: LoopEvent): Decision {
  const d = new DecisionBuilder(state, event.type);
  if (RESTING_STATES.has(state.phase) && event.type !== 'start') {
    // Nothing may restart a goal at rest except a new run; a late report changes nothing.
    return d.effect({ type: 'finish' }).build();
  }
  switch (event.type) {
    case 'start':
      d.startRun(event.checkpoints);
      if (event.setupFailure !== undefined) d.escalate({ task_id: SETUP_TASK, attempts: 1, last_error: event.setupFailure }, true);
      else d.advance(event.at);
      break;
    case 'executed':
      d.addCost(event.costUsd);
      if (event.ok) d.to('EVALUATING').effect({ type: 'verify', taskId: d.current().id, attempt: d.current().attempts });
      else if (event.kind === 'task') d.failAttempt(event.error, event.at);
      else if (event.kind === 'budget') d.stop(event.error, true);
      else d.infraError(event.error, event.at);
      break;
    case 'verified':
      if (event.passed) d.to('STATE_COMMIT').effect({ type: 'checkpoint', taskId: d.current().id, attempt: d.current().attempts });
      else d.failAttempt(event.output, event.at);
      break;
    case 'checkpointed':
      d.taskPassed(event.sha);
      d.advance(event.at);
      break;
    case 'checkpoint_refused':
      d.failAttempt(event.reason, event.at);
      break;
    case 'gate_done':
      if (event.passed) d.to('LOOP_COMPLETE').effect({ type: 'finish' });
      else d.escalate({ task_id: FINAL_GATE_TASK, attempts: 1, last_error: event.output }, false);
      break;
    case 'infra_error':
      d.infraError(event.error, event.at);
      break;
    case 'interrupted':
      d.stop(event.reason, state.phase !== 'TASK_PENDING', event.request === 'pause' ? 'PAUSED' : 'STOPPED');
      break;
  }
  return d.build();
}

/** Builds an initial state from the spec's tasks and the ledger's knowledge of them. */
export function initialState(input: {
  tasks: Array<Omit<TaskView, 'runAttempts' | 'runFailures'>>;
  limits: LoopLimits;
  startedAtMs: number;
  counters?: Partial<LoopCounters>;
}): LoopState {
  return {
    phase: 'INITIALIZING',
    tasks: input.tasks.map((t) => ({ ...t, runAttempts: 0, runFailures: 0 })),
    counters: { iterations: 0, consecutiveErrors: 0, errors: 0, errorsRecovered: 0, costUsd: 0, ...input.counters },
    limits: input.limits,
    startedAtMs: input.startedAtMs,
  };
}

class DecisionBuilder {
  private readonly state: LoopState;
  private readonly transitions: Transition[] = [];
  private readonly effects: Effect[] = [];

  constructor(
    prev: LoopState,
    private readonly eventName: string,
  ) {
    this.state = {
      ...prev,
      tasks: prev.tasks.map((t) => ({ ...t, dependencies: t.dependencies })),
      counters: { ...prev.counters },
    };
  }

  build(): Decision {
    return { state: this.state, transitions: this.transitions, effects: this.effects };
  }

  to(phase: GoalState, detail?: string): this {
    this.transitions.push({ from: this.state.phase, to: phase, event: this.eventName, ...(detail ? { detail } : {}) });
    this.state.phase = phase;
    return this;
  }

  effect(e: Effect): this {
    this.effects.push(e);
    return this;
  }

  current(): TaskView {
    const task = this.state.tasks.find((t) => t.id === this.state.currentTaskId);
    if (!task) throw new Error(`no current task in phase ${this.state.phase}`);
    return task;
  }

  addCost(usd: number | undefined): void {
    if (usd) this.state.counters.costUsd += usd;
  }

  startRun(checkpoints: Array<{ taskId: string; sha: string }>): void {
    // A run starts afresh: retries, the breaker and any previous verdict belong to the last run.
    delete this.state.escalation;
    delete this.state.stopReason;
    delete this.state.currentTaskId;
    this.state.counters.consecutiveErrors = 0;
    for (const t of this.state.tasks) {
      t.runAttempts = 0;
      t.runFailures = 0;
    }
    const done = new Map(checkpoints.map((c, i) => [c.taskId, { sha: c.sha, seq: i }]));
    for (const t of this.state.tasks) {
      const cp = done.get(t.id);
      if (cp) {
        t.status = 'done';
        t.checkpointSha = cp.sha;
        t.checkpointSeq = cp.seq;
      } else if (t.status !== 'skipped') {
        // Git is the truth: anything without a checkpoint is not done, whatever the ledger said.
        t.status = 'pending';
        delete t.checkpointSha;
        delete t.checkpointSeq;
      }
    }
    this.to('DECOMPOSING', 'spec loaded').to('TASK_PENDING', `${done.size} checkpoint(s) found`);
  }

  /** From TASK_PENDING: pick the next ready task, or the final gate, or wait. */
  advance(now: number): void {
    delete this.state.currentTaskId;
    const settled = new Set(this.state.tasks.filter((t) => isSettled(t.status)).map((t) => t.id));
    const next = nextReadyTask(this.state.tasks, settled);
    if (!next) {
      if (settled.size === this.state.tasks.length) {
        this.to('FINAL_GATE').effect({ type: 'final_gate' });
      } else {
        this.to('FAILED', 'no task is ready but some are unfinished').effect({ type: 'finish' });
        this.state.stopReason = 'internal: task graph is stuck';
      }
      return;
    }
    const tripped = this.safeguardTripped(now);
    if (tripped) return this.stop(tripped, false);
    if ((next.requiresApproval || riskExceeds(next.risk, this.state.limits.max_risk)) && !next.approved) {
      next.status = 'awaiting_approval';
      this.state.currentTaskId = next.id;
      this.state.stopReason = `task ${next.id} (risk: ${next.risk}) needs approval`;
      this.to('AWAITING_APPROVAL', next.id).effect({ type: 'request_approval', taskIds: [next.id] }).effect({ type: 'finish' });
      return;
    }
    this.startAttempt(next);
  }

  private startAttempt(task: TaskView, previousFailure?: string): void {
    this.state.currentTaskId = task.id;
    task.status = 'running';
    task.attempts += 1;
    task.runAttempts += 1;
    this.state.counters.iterations += 1;
    this.to('EXECUTING', `${task.id} attempt ${task.attempts}`).effect({
      type: 'execute',
      taskId: task.id,
      attempt: task.attempts,
      ...(previousFailure !== undefined ? { previousFailure } : {}),
    });
  }

  taskPassed(sha: string): void {
    const task = this.current();
    task.status = 'done';
    task.checkpointSha = sha;
    task.checkpointSeq = Math.max(-1, ...this.state.tasks.map((t) => t.checkpointSeq ?? -1)) + 1;
    delete task.lastError;
    this.state.counters.errorsRecovered += task.runFailures;
    this.state.counters.consecutiveErrors = 0;
    this.effect({ type: 'checkpointed', taskId: task.id, sha });
    this.to('TASK_PENDING', `${task.id} checkpointed at ${sha.slice(0, 7)}`);
  }

  failAttempt(failure: string, now: number): void {
    const task = this.current();
    task.lastError = failure;
    task.runFailures += 1;
    this.state.counters.consecutiveErrors = 0;
    this.to('REPAIR_LOOP', `${task.id} attempt ${task.attempts} failed`);
    if (task.runAttempts >= task.maxRetries) {
      task.status = 'escalated';
      return this.escalate({ task_id: task.id, attempts: task.runAttempts, last_error: failure }, true);
    }
    const tripped = this.safeguardTripped(now);
    if (tripped) return this.stop(tripped, true);
    this.effect({ type: 'rollback' });
    this.startAttempt(task, failure);
  }

  infraError(error: string, now: number): void {
    const c = this.state.counters;
    c.errors += 1;
    c.consecutiveErrors += 1;
    const task = this.state.tasks.find((t) => t.id === this.state.currentTaskId);
    if (task && task.status === 'running') {
      // An infrastructure fault is not the task's fault: it does not use up the task's retries.
      task.runAttempts -= 1;
      task.status = 'pending';
    }
    if (c.consecutiveErrors >= this.state.limits.error_threshold) {
      return this.stop(`circuit breaker: ${c.consecutiveErrors} consecutive infrastructure errors (last: ${firstLine(error)})`, true);
    }
    this.effect({ type: 'rollback' });
    this.to('TASK_PENDING', `infrastructure error: ${firstLine(error)}`);
    this.advance(now);
  }

  escalate(escalation: Escalation, rollback: boolean): void {
    if (rollback) this.effect({ type: 'rollback', bestEffort: true });
    this.state.escalation = escalation;
    this.state.stopReason = `task ${escalation.task_id} failed after ${escalation.attempts} attempt(s)`;
    this.to('ESCALATED', escalation.task_id).effect({ type: 'escalate', escalation }).effect({ type: 'finish' });
  }

  stop(reason: string, rollback: boolean, phase: 'STOPPED' | 'PAUSED' = 'STOPPED'): void {
    if (rollback) this.effect({ type: 'rollback', bestEffort: true });
    const task = this.state.tasks.find((t) => t.id === this.state.currentTaskId);
    if (task && task.status === 'running') task.status = 'pending';
    this.state.stopReason = reason;
    this.to(phase, reason).effect({ type: 'finish' });
  }

  private safeguardTripped(now: number): string | undefined {
    const { limits, counters } = this.state;
    if (counters.iterations >= limits.max_iterations) return `max_iterations reached (${limits.max_iterations})`;
    if (counters.costUsd >= limits.cost_cap_usd && limits.cost_cap_usd >= 0 && counters.costUsd > 0) {
      return `cost_cap_usd reached ($${counters.costUsd.toFixed(2)} of $${limits.cost_cap_usd})`;
    }
    if (now - this.state.startedAtMs >= limits.max_wall_minutes * 60_000) return `max_wall_minutes reached (${limits.max_wall_minutes})`;
    return undefined;
  }
}

function firstLine(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
