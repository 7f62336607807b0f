import { budgetTripped, riskExceeds, type LoopLimits } from '../goal/limits.js';
import { dependentsOf, nextReadyTask } from '../goal/dag.js';
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
  /**
   * The first task that escalated in this run (while the loop goes on with independent work), or,
   * once the goal rests in ESCALATED, the escalation as reported: with the other escalated tasks,
   * the blocked dependents and what was checkpointed meanwhile.
   */
  escalation?: Escalation;
  /**
   * Repo config `on_escalation`: `continue` (absent) keeps working every task that does not
   * depend on an escalated one before the goal rests in ESCALATED; `stop` rests at once.
   */
  onEscalation?: OnEscalation;
}

export type OnEscalation = 'continue' | 'stop';

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
      else if (event.kind === 'budget') d.halt(event.error, true);
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
  onEscalation?: OnEscalation;
}): LoopState {
  return {
    phase: 'INITIALIZING',
    tasks: input.tasks.map((t) => ({ ...t, runAttempts: 0, runFailures: 0 })),
    counters: { iterations: 0, consecutiveErrors: 0, errors: 0, errorsRecovered: 0, costUsd: 0, ...input.counters },
    limits: input.limits,
    startedAtMs: input.startedAtMs,
    ...(input.onEscalation ? { onEscalation: input.onEscalation } : {}),
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

  /**
   * From TASK_PENDING: pick the next ready task, or the final gate, or wait. Escalated tasks and
   * their dependents are not ready; once nothing else is, the goal rests in ESCALATED.
   * `rollback`: the workspace must first go back to the last checkpoint (a task just escalated).
   */
  advance(now: number, rollback = false): void {
    delete this.state.currentTaskId;
    const tasks = this.state.tasks;
    const settled = new Set(tasks.filter((t) => isSettled(t.status)).map((t) => t.id));
    const held = new Set(tasks.filter((t) => t.status === 'escalated').map((t) => t.id));
    const escalated = held.size > 0;
    // With an escalation pending, a task that needs approval waits for the human with it; the
    // loop goes on with the others and asks for the approval when it comes to rest.
    const approvals: TaskView[] = [];
    let next = nextReadyTask(tasks, settled, held);
    while (next && escalated && this.needsApproval(next)) {
      approvals.push(next);
      held.add(next.id);
      next = nextReadyTask(tasks, settled, held);
    }
    const tripped = next ? this.safeguardTripped(now) : undefined;
    if (rollback) this.effect({ type: 'rollback', ...(next && !tripped ? {} : { bestEffort: true }) });
    if (escalated && (!next || tripped)) {
      for (const t of approvals) t.status = 'awaiting_approval';
      if (approvals.length) this.effect({ type: 'request_approval', taskIds: approvals.map((t) => t.id) });
      return this.restEscalated(tripped);
    }
    if (!next) {
      if (settled.size === tasks.length) {
        this.to('FINAL_GATE').effect({ type: 'final_gate' });
      } else {
        this.to('FAILED', 'no task is ready but some are unfinished').effect({ type: 'finish' });
        this.state.stopReason = 'internal: task graph is stuck';
      }
      return;
    }
    if (tripped) return this.stop(tripped, false);
    if (this.needsApproval(next)) {
      next.status = 'awaiting_approval';
      this.state.currentTaskId = next.id;
      this.state.stopReason = `task ${next.id} (risk: ${next.risk}) needs approval`;
      this.to('AWAITING_APPROVAL', next.id).effect({ type: 'request_approval', taskIds: [next.id] }).effect({ type: 'finish' });
      return;
    }
    this.startAttempt(next);
  }

  private needsApproval(task: TaskView): boolean {
    return (task.requiresApproval || riskExceeds(task.risk, this.state.limits.max_risk)) && !task.approved;
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
    const escalation = this.state.escalation;
    if (escalation) this.state.escalation = { ...escalation, done_meanwhile: [...(escalation.done_meanwhile ?? []), task.id] };
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
      const escalation: Escalation = { task_id: task.id, attempts: task.runAttempts, last_error: failure };
      if (this.state.onEscalation === 'stop') return this.escalate(escalation, true);
      // The first escalation is the one reported; the loop goes on with what does not depend on it.
      this.state.escalation ??= escalation;
      this.to('TASK_PENDING', `${task.id} escalated after ${task.runAttempts} attempt(s); independent tasks go on`);
      return this.advance(now, true);
    }
    const tripped = this.safeguardTripped(now);
    if (tripped) return this.halt(tripped, true);
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
      return this.halt(`circuit breaker: ${c.consecutiveErrors} consecutive infrastructure errors (last: ${firstLine(error)})`, true);
    }
    this.effect({ type: 'rollback' });
    this.to('TASK_PENDING', `infrastructure error: ${firstLine(error)}`);
    this.advance(now);
  }

  escalate(escalation: Escalation, rollback: boolean, note?: string): void {
    if (rollback) this.effect({ type: 'rollback', bestEffort: true });
    this.state.escalation = escalation;
    const also = escalation.also_escalated?.length ? `; also escalated: ${escalation.also_escalated.join(', ')}` : '';
    const blocked = escalation.blocked?.length ? `; blocked: ${escalation.blocked.join(', ')}` : '';
    this.state.stopReason = `task ${escalation.task_id} failed after ${escalation.attempts} attempt(s)${also}${blocked}${note ? `; ${note}` : ''}`;
    this.to('ESCALATED', escalation.task_id).effect({ type: 'escalate', escalation }).effect({ type: 'finish' });
  }

  /**
   * The goal comes to rest in ESCALATED after working what it could: one escalation, naming the
   * first escalated task, the others, and the dependents left blocked. `stoppedBy`: a safeguard
   * ended the independent work early.
   */
  private restEscalated(stoppedBy?: string): void {
    const current = this.state.tasks.find((t) => t.id === this.state.currentTaskId);
    if (current && current.status === 'running') current.status = 'pending';
    delete this.state.currentTaskId;
    const first = this.state.escalation!;
    const escalated = this.state.tasks.filter((t) => t.status === 'escalated').map((t) => t.id);
    const dependents = new Set(escalated.flatMap((id) => [...dependentsOf(this.state.tasks, id)]));
    const blocked = this.state.tasks.filter((t) => dependents.has(t.id) && !isSettled(t.status) && t.status !== 'escalated').map((t) => t.id);
    const also = escalated.filter((id) => id !== first.task_id);
    const escalation: Escalation = { ...first, ...(also.length ? { also_escalated: also } : {}), ...(blocked.length ? { blocked } : {}) };
    this.escalate(escalation, false, stoppedBy && `independent work stopped: ${stoppedBy}`);
  }

  /** A safeguard ends the work: STOPPED, or ESCALATED when a task already escalated in this run. */
  halt(reason: string, rollback: boolean): void {
    if (!this.state.tasks.some((t) => t.status === 'escalated')) return this.stop(reason, rollback);
    if (rollback) this.effect({ type: 'rollback', bestEffort: true });
    this.restEscalated(reason);
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
    return budgetTripped(limits, { iterations: counters.iterations + 1, costUsd: counters.costUsd, elapsedMs: now - this.state.startedAtMs });
  }
}

function firstLine(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
