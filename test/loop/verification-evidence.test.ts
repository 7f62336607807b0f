import { describe, expect, it } from 'vitest';
import type { BaselinePolicy } from '../../src/goal/evidence.js';
import type { LoopLimits } from '../../src/goal/limits.js';
import { type Decision, decide, type LoopEvent, type LoopState } from '../../src/loop/transition.js';
import { stateOf, type TaskInput, view } from '../helpers/spec-builders.js';

// The pure side of DESIGN.md §10: the baseline before a task's first attempt, the evidence its
// checkpoint carries, and identical failures ending a task early.

function withPolicy(tasks: TaskInput[], policy: BaselinePolicy, limits: Partial<LoopLimits> = {}): LoopState {
  return { ...stateOf(tasks, { limits }), baselinePolicy: policy };
}

/** Feeds events in order; returns every decision. */
function feed(state: LoopState, ...events: LoopEvent[]): Decision[] {
  const out: Decision[] = [];
  let s = state;
  for (const e of events) {
    const d = decide(s, e);
    out.push(d);
    s = d.state;
  }
  return out;
}

const start: LoopEvent = { type: 'start', at: 1, checkpoints: [] };
const red: LoopEvent = { type: 'baseline_done', at: 2, passed: false, output: 'FAIL: expected 3, got 2' };
const green: LoopEvent = { type: 'baseline_done', at: 2, passed: true, output: 'no red before green: already passes' };
const executed: LoopEvent = { type: 'executed', at: 3, ok: true };
const passed: LoopEvent = { type: 'verified', at: 4, passed: true, output: 'ok' };
const failed = (signature: string, output = `FAIL ${signature}`): LoopEvent => ({ type: 'verified', at: 4, passed: false, output, signature });

describe('red before green', () => {
  it('runs the baseline before the first attempt, then the attempt; a red baseline makes the checkpoint red->green', () => {
    const [d1, d2, , d4] = feed(withPolicy([view('a')], 'warn'), start, red, executed, passed);
    expect(d1!.effects).toEqual([{ type: 'baseline', taskId: 'a', attempt: 1 }]);
    expect(d1!.state.phase).toBe('EVALUATING');
    expect(d1!.state.tasks[0]!.attempts).toBe(0);
    expect(d2!.effects).toEqual([{ type: 'execute', taskId: 'a', attempt: 1 }]);
    expect(d4!.effects).toEqual([{ type: 'checkpoint', taskId: 'a', attempt: 1, evidence: 'red->green' }]);
  });

  it('warn: a green baseline still runs the task, and its checkpoint says green->green', () => {
    const [, d2, , d4] = feed(withPolicy([view('a')], 'warn'), start, green, executed, passed);
    expect(d2!.effects).toEqual([{ type: 'execute', taskId: 'a', attempt: 1 }]);
    expect(d4!.effects).toEqual([{ type: 'checkpoint', taskId: 'a', attempt: 1, evidence: 'green->green' }]);
  });

  it('require_red: a green baseline escalates the task at once, without using an attempt; independent tasks go on', () => {
    const [, d2] = feed(withPolicy([view('a'), view('b'), view('c', ['a'])], 'require_red'), start, green);
    const a = d2!.state.tasks.find((t) => t.id === 'a')!;
    expect(a.status).toBe('escalated');
    expect(a.attempts).toBe(0);
    expect(d2!.effects.some((e) => e.type === 'execute')).toBe(false);
    expect(d2!.effects).toContainEqual({ type: 'baseline', taskId: 'b', attempt: 1 });
    expect(d2!.state.escalation).toMatchObject({ task_id: 'a', attempts: 0, cause: 'passes_before' });
    expect(d2!.state.counters.iterations).toBe(0);
  });

  it('require_red with on_escalation stop: the goal rests saying the task did not run', () => {
    const state = { ...withPolicy([view('a')], 'require_red'), onEscalation: 'stop' as const };
    const [, d2] = feed(state, start, green);
    expect(d2!.state.phase).toBe('ESCALATED');
    expect(d2!.state.stopReason).toMatch(/task a did not run: its verification passes before the task/);
  });

  it('require_red: a task that says expect green runs on a green baseline', () => {
    const [, d2] = feed(withPolicy([view('a', [], { expect: 'green' })], 'require_red'), start, green);
    expect(d2!.effects).toEqual([{ type: 'execute', taskId: 'a', attempt: 1 }]);
  });

  it('off: no baseline, and the checkpoint is unchecked', () => {
    const [d1, , d3] = feed(withPolicy([view('a')], 'off'), start, executed, passed);
    expect(d1!.effects).toEqual([{ type: 'execute', taskId: 'a', attempt: 1 }]);
    expect(d3!.effects).toEqual([{ type: 'checkpoint', taskId: 'a', attempt: 1, evidence: 'unchecked' }]);
  });

  it('the baseline runs once per task per run: a retry does not take it again', () => {
    const decisions = feed(withPolicy([view('a')], 'warn'), start, red, executed, failed('one'), executed);
    expect(decisions[3]!.effects).toContainEqual(expect.objectContaining({ type: 'execute', attempt: 2 }));
    expect(decisions.flatMap((d) => d.effects).filter((e) => e.type === 'baseline')).toHaveLength(1);
  });

  it('an infrastructure error during the baseline costs no attempt, and the baseline is taken again', () => {
    const [, d2] = feed(withPolicy([view('a')], 'warn'), start, { type: 'infra_error', at: 2, error: 'sandbox failed' });
    expect(d2!.state.tasks[0]!.runAttempts).toBe(0);
    expect(d2!.effects).toContainEqual({ type: 'baseline', taskId: 'a', attempt: 1 });
  });
});

describe('no paying for the same failure twice', () => {
  it('two identical verification failures end the task with "no progress" after 2 attempts, not 3', () => {
    const decisions = feed(withPolicy([view('a')], 'off'), start, executed, failed('same'), executed, failed('same'));
    const last = decisions.at(-1)!;
    expect(last.state.tasks[0]).toMatchObject({ status: 'escalated', attempts: 2 });
    expect(last.state.escalation).toMatchObject({ task_id: 'a', attempts: 2, cause: 'no_progress' });
    expect(last.state.escalation!.last_error).toMatch(/^no progress: the verification failed the same way 2 times in a row/);
    expect(last.state.stopReason).toMatch(/made no progress after 2 attempt\(s\)/);
    expect(last.effects.some((e) => e.type === 'execute')).toBe(false);
  });

  it('different failures use every attempt', () => {
    const decisions = feed(withPolicy([view('a')], 'off'), start, executed, failed('one'), executed, failed('two'));
    expect(decisions.at(-1)!.effects).toContainEqual(expect.objectContaining({ type: 'execute', attempt: 3 }));
  });

  it('with max_same_failure 3, the attempt after a repeated failure is told that nothing changed', () => {
    const decisions = feed(withPolicy([view('a', [], { maxRetries: 5 })], 'off', { max_same_failure: 3 }), start, executed, failed('same'), executed, failed('same'));
    const next = decisions.at(-1)!.effects.find((e) => e.type === 'execute');
    expect(next).toMatchObject({ attempt: 3, previousFailure: expect.stringMatching(/^Nothing changed: this failure is the same as the previous attempt's/) });
  });

  it('a different kind of failure in between breaks the row', () => {
    const runFailed: LoopEvent = { type: 'executed', at: 3, ok: false, kind: 'task', error: 'run step failed' };
    const decisions = feed(withPolicy([view('a', [], { maxRetries: 5 })], 'off'), start, executed, failed('same'), runFailed, executed, failed('same'));
    expect(decisions.at(-1)!.state.tasks[0]!.status).toBe('running');
    expect(decisions.at(-1)!.effects).toContainEqual(expect.objectContaining({ type: 'execute', attempt: 4 }));
  });
});
