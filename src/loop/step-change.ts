import type { LoopResult } from '../goal/result.js';
import { RESTING_STATES } from '../goal/states.js';
import type { GoalChange } from '../ports/goal-ledger.js';
import type { EffectInput } from '../ports/outbox.js';
import { type LoopEffect, recordedEffect } from './outbox.js';
import type { TaskTimes } from './run-view.js';
import { type Decision, type Effect, FOLLOW_BASE_TASK, type LoopState } from './transition.js';

/**
 * The decision's transitions, task changes and counter changes, as one ledger write with its
 * effects. Notes in `taskTimes` when each task's attempts began and ended.
 */
export function stepChange(prev: LoopState, decision: Decision, taskTimes: TaskTimes, now: number, effects: EffectInput[]): GoalChange {
  const next = decision.state;
  const last = decision.transitions.length - 1;
  const transitions = decision.transitions.map((t, i) => {
    const stopReason = i === last && RESTING_STATES.has(t.to) ? (next.stopReason ?? null) : i === last ? null : undefined;
    return { to: t.to, event: t.event, detail: t.detail ?? null, ...(stopReason !== undefined ? { stopReason } : {}) };
  });
  const before = new Map(prev.tasks.map((t) => [t.id, t]));
  const tasks: NonNullable<GoalChange['tasks']> = [];
  for (const t of next.tasks) {
    const b = before.get(t.id);
    if (b && b.status === t.status && b.attempts === t.attempts && b.checkpointSha === t.checkpointSha && b.lastError === t.lastError) continue;
    tasks.push({ taskId: t.id, patch: { status: t.status, attempts: t.attempts, checkpointSha: t.checkpointSha ?? null, lastError: t.lastError ?? null } });
    const times = taskTimes.get(t.id) ?? {};
    // Elapsed time counts from the task's first attempt in this run to its checkpoint or escalation.
    if (t.status === 'running') {
      times.startedAt ??= now;
      delete times.endedAt;
    } else if (b?.status === 'running' && (t.status === 'done' || t.status === 'escalated')) {
      times.endedAt = now;
    }
    taskTimes.set(t.id, times);
  }
  const dc = {
    iterations: next.counters.iterations - prev.counters.iterations,
    errors: next.counters.errors - prev.counters.errors,
    errors_recovered: next.counters.errorsRecovered - prev.counters.errorsRecovered,
  };
  return {
    transitions,
    tasks,
    ...(dc.iterations || dc.errors || dc.errors_recovered ? { counters: dc } : {}),
    effects,
  };
}

/** The effects a decision implies that reach people (the forge), in the outbox's terms. */
export function outboxEffects(effects: readonly Effect[], result: LoopResult | undefined): EffectInput[] {
  const out: EffectInput[] = [];
  for (const e of effects) {
    if (e.type === 'checkpointed') {
      // The push first: the PR and the comments follow it (effects are performed in order).
      if (e.push) out.push(loopEffect({ kind: 'push', payload: { taskId: e.taskId, sha: e.push.sha, lease: e.push.lease } }));
      out.push(loopEffect({ kind: 'checkpointed', payload: { taskId: e.taskId, sha: e.sha } }));
    } else if (e.type === 'base_followed') {
      // The rewritten branch first, under the lease of the tip it replaced; then people are told.
      if (e.push) out.push(loopEffect({ kind: 'push', payload: { taskId: FOLLOW_BASE_TASK, sha: e.push.sha, lease: e.push.lease } }));
      out.push(loopEffect({ kind: 'base_followed', payload: { report: e.report } }));
    } else if (e.type === 'request_approval') out.push(loopEffect({ kind: 'request_approval', payload: { taskIds: e.taskIds } }));
    else if (e.type === 'escalate') out.push(loopEffect({ kind: 'escalate', payload: { escalation: e.escalation } }));
    else if (e.type === 'finish' && result) out.push(loopEffect({ kind: 'finished', payload: { result } }));
  }
  return out;
}

export const loopEffect = (e: LoopEffect): EffectInput => recordedEffect(e);
