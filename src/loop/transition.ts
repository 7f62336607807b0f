import { type BaselinePolicy, evidenceFor } from '../goal/evidence.js';
import type { LoopLimits } from '../goal/limits.js';
import { RESTING_STATES } from '../goal/states.js';
import { DecisionBuilder } from './decision-builder.js';
import { type Decision, FINAL_GATE_TASK, FOLLOW_BASE_TASK, type LoopCounters, type LoopEvent, type LoopState, type OnEscalation, SETUP_TASK, type TaskView } from './loop-model.js';

// The loop's model lives in loop-model.ts; these names stay importable from here.
export type { BaseFollowedReport, Decision, Effect, ExecutionFailureKind, FollowedBase, LoopCounters, LoopEvent, LoopState, OnEscalation, TaskView, Transition } from './loop-model.js';
export { FINAL_GATE_TASK, FOLLOW_BASE_TASK, SETUP_TASK } from './loop-model.js';

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
      d.startRun(event.checkpoints, event.gatePassed === true);
      if (event.followedBase) d.followedBase(event.followedBase);
      if (event.followedBase?.unrepairable !== undefined) d.escalate({ task_id: FOLLOW_BASE_TASK, attempts: 1, last_error: event.followedBase.unrepairable }, true);
      else if (event.setupFailure !== undefined) d.escalate({ task_id: SETUP_TASK, attempts: 1, last_error: event.setupFailure }, true);
      else d.advance(event.at);
      break;
    case 'executed':
      d.addCost(event.costUsd);
      if (event.ok) d.to('EVALUATING').effect({ type: 'verify', taskId: d.current().id, attempt: d.current().attempts });
      else if (event.kind === 'task') d.failAttempt(event.error, event.at);
      else if (event.kind === 'budget') d.halt(event.error, true);
      else d.infraError(event.error, event.at);
      break;
    case 'baseline_done':
      d.baselineDone(event.passed, event.output, event.at);
      break;
    case 'verified':
      if (event.passed) d.to('STATE_COMMIT').effect({ type: 'checkpoint', taskId: d.current().id, attempt: d.current().attempts, evidence: evidenceFor(d.current().baseline) });
      else d.verificationFailed(event.output, event.signature, event.at);
      break;
    case 'checkpointed':
      d.taskPassed(event.sha, event.push);
      d.advance(event.at);
      break;
    case 'unpushed':
      d.keepOnly(event.checkpoints);
      d.infraError(event.error, event.at);
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
  tasks: Omit<TaskView, 'runAttempts' | 'runFailures'>[];
  limits: LoopLimits;
  startedAtMs: number;
  counters?: Partial<LoopCounters>;
  onEscalation?: OnEscalation;
  baselinePolicy?: BaselinePolicy;
}): LoopState {
  return {
    phase: 'INITIALIZING',
    tasks: input.tasks.map((t) => ({ ...t, runAttempts: 0, runFailures: 0 })),
    counters: { iterations: 0, consecutiveErrors: 0, errors: 0, errorsRecovered: 0, costUsd: 0, ...input.counters },
    limits: input.limits,
    startedAtMs: input.startedAtMs,
    ...(input.onEscalation ? { onEscalation: input.onEscalation } : {}),
    ...(input.baselinePolicy ? { baselinePolicy: input.baselinePolicy } : {}),
  };
}
