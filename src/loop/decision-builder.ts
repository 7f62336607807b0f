import { dependentsOf, nextReadyTask } from '../goal/dag.js';
import type { Escalation, EscalationCause } from '../goal/escalation.js';
import { budgetTripped, riskExceeds } from '../goal/limits.js';
import { type GoalState, isSettled } from '../goal/states.js';
import type { PendingPush } from '../ports/workspace.js';
import type { Decision, Effect, FollowedBase, LoopState, TaskView, Transition } from './loop-model.js';

/**
 * Builds one decision: a copy of the state, changed by the named steps below, and the transitions
 * and effects they imply. Pure, as `decide` is.
 */
export class DecisionBuilder {
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

  startRun(checkpoints: Array<{ taskId: string; sha: string }>, gatePassed = false): void {
    // A run starts afresh: retries, the breaker and any previous verdict belong to the last run.
    delete this.state.escalation;
    delete this.state.stopReason;
    delete this.state.currentTaskId;
    delete this.state.baselineTaskId;
    delete this.state.followedBase;
    if (gatePassed) this.state.gatePassed = true;
    else delete this.state.gatePassed;
    this.state.counters.consecutiveErrors = 0;
    for (const t of this.state.tasks) {
      t.runAttempts = 0;
      t.runFailures = 0;
      // The tree may have changed since (a human's push): the baseline is taken again.
      delete t.baseline;
      delete t.sameFailures;
      delete t.lastFailureSignature;
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
   * The goal branch was brought onto its moved base (the run's start): the tasks to repair go back
   * to pending, their next attempt told why; the rewritten branch is pushed, then people are told.
   */
  followedBase(followed: FollowedBase): void {
    const { repairs, unrepairable: _u, push, kept, ...report } = followed;
    if (kept) return;
    for (const r of repairs) {
      const t = this.state.tasks.find((task) => task.id === r.taskId);
      if (!t || t.status === 'skipped') continue;
      t.status = 'pending';
      delete t.checkpointSha;
      delete t.checkpointSeq;
      t.repair = r.detail;
      t.lastError = r.detail;
    }
    this.state.followedBase = { ...report, repairs: repairs.map(({ taskId, why }) => ({ taskId, why })) };
    this.effect({ type: 'base_followed', report: this.state.followedBase, ...(push ? { push } : {}) });
  }

  /**
   * A push was rejected mid-run: the tasks done whose checkpoint is not among `checkpoints` (the
   * remote's) are to do again. The rest of the run's state stays.
   */
  keepOnly(checkpoints: Array<{ taskId: string; sha: string }>): void {
    const onRemote = new Map(checkpoints.map((c) => [c.taskId, c.sha]));
    for (const t of this.state.tasks) {
      if (t.status !== 'done' || onRemote.get(t.id) === t.checkpointSha) continue;
      const sha = onRemote.get(t.id);
      if (sha) {
        t.checkpointSha = sha;
        continue;
      }
      t.status = 'pending';
      delete t.checkpointSha;
      delete t.checkpointSeq;
    }
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
      if (approvals.length > 0) this.effect({ type: 'request_approval', taskIds: approvals.map((t) => t.id) });
      this.restEscalated(tripped);
      return;
    }
    if (!next) {
      if (settled.size === tasks.length && this.state.gatePassed) {
        this.to('LOOP_COMPLETE', 'the final gate already passed on this commit').effect({ type: 'finish' });
      } else if (settled.size === tasks.length) {
        this.to('FINAL_GATE').effect({ type: 'final_gate' });
      } else {
        this.to('FAILED', 'no task is ready but some are unfinished').effect({ type: 'finish' });
        this.state.stopReason = 'internal: task graph is stuck';
      }
      return;
    }
    if (tripped) {
      this.stop(tripped, false);
      return;
    }
    if (this.needsApproval(next)) {
      next.status = 'awaiting_approval';
      this.state.currentTaskId = next.id;
      this.state.stopReason = `task ${next.id} (risk: ${next.risk}) needs approval`;
      this.to('AWAITING_APPROVAL', next.id)
        .effect({ type: 'request_approval', taskIds: [next.id] })
        .effect({ type: 'finish' });
      return;
    }
    this.startAttempt(next, next.repair);
  }

  private needsApproval(task: TaskView): boolean {
    return (task.requiresApproval || riskExceeds(task.risk, this.state.limits.max_risk)) && !task.approved;
  }

  private startAttempt(task: TaskView, previousFailure?: string): void {
    if (previousFailure === undefined && task.runAttempts === 0 && task.baseline === undefined && (this.state.baselinePolicy ?? 'off') !== 'off') {
      this.startBaseline(task);
      return;
    }
    delete this.state.baselineTaskId;
    delete task.repair; // told once: a retry is told its own failure
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

  /**
   * Red before green: before the task's first attempt of the run, its verification runs on the
   * tree without its change. Counts against the goal's time, not the task's attempts.
   */
  private startBaseline(task: TaskView): void {
    this.state.currentTaskId = task.id;
    this.state.baselineTaskId = task.id;
    task.status = 'running';
    this.to('EVALUATING', `${task.id} baseline`).effect({ type: 'baseline', taskId: task.id, attempt: task.attempts + 1 });
  }

  /**
   * The baseline's result. Green where the task expects red proves nothing about the task: under
   * `require_red` it escalates at once (`output` says why and how to fix the spec); under `warn`
   * it runs, and its evidence says green->green. (The baseline runner put back what it left in the tree.)
   */
  baselineDone(passed: boolean, output: string, now: number): void {
    const task = this.current();
    delete this.state.baselineTaskId;
    task.baseline = passed ? 'green' : 'red';
    if (passed && task.expect !== 'green' && this.state.baselinePolicy === 'require_red') {
      this.to('REPAIR_LOOP', `${task.id} verification passes before the task`);
      task.lastError = output;
      this.escalateTask(task, output, now, 'passes_before');
      return;
    }
    this.startAttempt(task);
  }

  /**
   * A verification failure. The same failure as the attempt before (by signature) is no
   * progress: the next attempt is told, and `max_same_failure` of them in a row end the task early.
   */
  verificationFailed(output: string, signature: string | undefined, now: number): void {
    const task = this.current();
    const same = signature !== undefined && signature === task.lastFailureSignature;
    task.sameFailures = same ? (task.sameFailures ?? 1) + 1 : 1;
    if (signature !== undefined) task.lastFailureSignature = signature;
    else delete task.lastFailureSignature;
    const n = task.sameFailures;
    const limit = this.state.limits.max_same_failure;
    if (same && limit !== undefined && n >= limit) {
      this.failAttempt(`no progress: the verification failed the same way ${n} times in a row (timings, paths and addresses aside); another attempt would repeat it.\n\n${output}`, now, {
        keepRow: true,
        escalate: 'no_progress',
      });
      return;
    }
    const note = same ? `Nothing changed: this failure is the same as the previous attempt's (timings, paths and addresses aside). Try a different approach.\n\n` : '';
    this.failAttempt(`${note}${output}`, now, { keepRow: true });
  }

  taskPassed(sha: string, push?: PendingPush): void {
    const task = this.current();
    task.status = 'done';
    task.checkpointSha = sha;
    task.checkpointSeq = Math.max(-1, ...this.state.tasks.map((t) => t.checkpointSeq ?? -1)) + 1;
    delete task.lastError;
    this.state.counters.errorsRecovered += task.runFailures;
    this.state.counters.consecutiveErrors = 0;
    const escalation = this.state.escalation;
    if (escalation) this.state.escalation = { ...escalation, done_meanwhile: [...(escalation.done_meanwhile ?? []), task.id] };
    this.effect({ type: 'checkpointed', taskId: task.id, sha, ...(push ? { push } : {}) });
    this.to('TASK_PENDING', `${task.id} checkpointed at ${sha.slice(0, 7)}`);
  }

  /**
   * A failed attempt: retried, or escalated when out of attempts (or `escalate`: no progress).
   * `keepRow`: a verification failure, which keeps the count of identical ones in a row.
   */
  failAttempt(failure: string, now: number, opts: { keepRow?: boolean; escalate?: EscalationCause } = {}): void {
    const task = this.current();
    task.lastError = failure;
    task.runFailures += 1;
    if (!opts.keepRow) {
      delete task.sameFailures;
      delete task.lastFailureSignature;
    }
    this.state.counters.consecutiveErrors = 0;
    this.to('REPAIR_LOOP', `${task.id} attempt ${task.attempts} failed`);
    if (opts.escalate || task.runAttempts >= task.maxRetries) {
      this.escalateTask(task, failure, now, opts.escalate);
      return;
    }
    const tripped = this.safeguardTripped(now);
    if (tripped) {
      this.halt(tripped, true);
      return;
    }
    this.effect({ type: 'rollback' });
    this.startAttempt(task, failure);
  }

  /** The task is out of attempts (or may not run): the goal rests, or goes on with what does not depend on it. */
  private escalateTask(task: TaskView, failure: string, now: number, cause?: EscalationCause): void {
    task.status = 'escalated';
    const escalation: Escalation = { task_id: task.id, attempts: task.runAttempts, last_error: failure, ...(cause ? { cause } : {}) };
    if (this.state.onEscalation === 'stop') {
      this.escalate(escalation, true);
      return;
    }
    // The first escalation is the one reported; the loop goes on with what does not depend on it.
    this.state.escalation ??= escalation;
    this.to('TASK_PENDING', `${task.id} escalated after ${task.runAttempts} attempt(s); independent tasks go on`);
    this.advance(now, true);
  }

  infraError(error: string, now: number): void {
    const c = this.state.counters;
    c.errors += 1;
    c.consecutiveErrors += 1;
    const task = this.state.tasks.find((t) => t.id === this.state.currentTaskId);
    if (task && task.status === 'running') {
      // An infrastructure fault is not the task's fault: it does not use up the task's retries
      // (a baseline used none).
      if (this.state.baselineTaskId !== task.id) task.runAttempts -= 1;
      task.status = 'pending';
    }
    delete this.state.baselineTaskId;
    if (c.consecutiveErrors >= this.state.limits.error_threshold) {
      this.halt(`circuit breaker: ${c.consecutiveErrors} consecutive infrastructure errors (last: ${firstLine(error)})`, true);
      return;
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
    const what =
      escalation.cause === 'passes_before'
        ? `task ${escalation.task_id} did not run: its verification passes before the task`
        : escalation.cause === 'no_progress'
          ? `task ${escalation.task_id} made no progress after ${escalation.attempts} attempt(s): its last verification failures were identical`
          : `task ${escalation.task_id} failed after ${escalation.attempts} attempt(s)`;
    this.state.stopReason = `${what}${also}${blocked}${note ? `; ${note}` : ''}`;
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
    const escalation: Escalation = { ...first, ...(also.length > 0 ? { also_escalated: also } : {}), ...(blocked.length > 0 ? { blocked } : {}) };
    this.escalate(escalation, false, stoppedBy && `independent work stopped: ${stoppedBy}`);
  }

  /** A safeguard ends the work: STOPPED, or ESCALATED when a task already escalated in this run. */
  halt(reason: string, rollback: boolean): void {
    if (!this.state.tasks.some((t) => t.status === 'escalated')) {
      this.stop(reason, rollback);
      return;
    }
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
