import { describe, expect, it } from 'vitest';
import { GOAL_STATES, isSettled, RESTING_STATES, TASK_STATUSES } from '../../src/goal/states.js';
import { type Decision, decide, type Effect, FINAL_GATE_TASK, initialState, type LoopEvent, type LoopState } from '../../src/loop/transition.js';
import { limits, stateOf, view } from '../helpers/spec-builders.js';

// ---------------------------------------------------------------------------------------------
// A scripted driver: performs the decided effects the way the adapters would, with outcomes
// chosen per task attempt, and feeds the resulting events back into `decide`.

/**
 * What one attempt of a task does:
 * - `pass`: run steps ok, verification passes, checkpoint made;
 * - `fail`: verification fails; `run-fail`: a run step fails;
 * - `infra`: the sandbox/agent breaks (infrastructure); `checkpoint-infra`: the checkpoint push breaks;
 * - `refuse`: verification passes but the checkpoint is refused (e.g. a protected path);
 * - `budget`: the agent reports the budget is spent.
 */
type Outcome = 'pass' | 'fail' | 'run-fail' | 'infra' | 'checkpoint-infra' | 'refuse' | 'budget';

interface Script {
  tasks?: Record<string, Outcome[]>;
  /** Results of successive final gates (default: pass). */
  gate?: boolean[];
  /** Model cost reported by every execution. */
  costPerExecute?: number;
  /** Milliseconds between events (default 1000). */
  tick?: number;
  /** Time of the start event (default: state.startedAtMs + tick). */
  startAt?: number;
  checkpoints?: Array<{ taskId: string; sha: string }>;
}

interface Run {
  state: LoopState;
  decisions: Decision[];
  events: LoopEvent[];
  /** Every `execute` effect, in order. */
  executed: Extract<Effect, { type: 'execute' }>[];
  effects: Effect[];
  now: number;
}

const failureText = (taskId: string, attempt: number) => `verification of ${taskId} failed on attempt ${attempt}`;
const runFailureText = (taskId: string, attempt: number) => `run step of ${taskId} failed on attempt ${attempt}`;
const shaOf = (taskId: string, attempt: number) => `${taskId.replace(/[^a-z0-9]/g, '')}0000000000${attempt}`.padEnd(40, 'f');

function drive(initial: LoopState, script: Script = {}, first?: LoopEvent): Run {
  const tick = script.tick ?? 1000;
  let now = script.startAt ?? initial.startedAtMs + tick;
  const queues = new Map(Object.entries(script.tasks ?? {}).map(([k, v]) => [k, [...v]]));
  const gates = [...(script.gate ?? [])];
  const current = new Map<string, Outcome>();
  const run: Run = { state: initial, decisions: [], events: [], executed: [], effects: [], now };
  let event: LoopEvent | undefined = first ?? { type: 'start', at: now, checkpoints: script.checkpoints ?? [] };
  for (let step = 0; event; step++) {
    if (step > 500) throw new Error('the loop did not come to rest within 500 steps');
    run.events.push(event);
    const decision = decide(run.state, event);
    run.decisions.push(decision);
    run.state = decision.state;
    run.effects.push(...decision.effects);
    event = undefined;
    for (const effect of decision.effects) {
      now += tick;
      event = perform(effect, now);
      if (event) break;
    }
    run.now = now;
  }
  return run;

  function perform(effect: Effect, at: number): LoopEvent | undefined {
    switch (effect.type) {
      case 'execute': {
        run.executed.push(effect);
        const outcome = queues.get(effect.taskId)?.shift() ?? 'pass';
        current.set(effect.taskId, outcome);
        const cost = script.costPerExecute ? { costUsd: script.costPerExecute } : {};
        if (outcome === 'run-fail') return { type: 'executed', at, ok: false, kind: 'task', error: runFailureText(effect.taskId, effect.attempt), ...cost };
        if (outcome === 'infra') return { type: 'executed', at, ok: false, kind: 'infra', error: 'sandbox failed: spawn ENOMEM', ...cost };
        if (outcome === 'budget') return { type: 'executed', at, ok: false, kind: 'budget', error: 'cost_cap_usd reached by the agent', ...cost };
        return { type: 'executed', at, ok: true, ...cost };
      }
      case 'verify': {
        const outcome = current.get(effect.taskId);
        if (outcome === 'fail') return { type: 'verified', at, passed: false, output: failureText(effect.taskId, effect.attempt) };
        return { type: 'verified', at, passed: true, output: 'ok' };
      }
      case 'checkpoint': {
        const outcome = current.get(effect.taskId);
        if (outcome === 'refuse') return { type: 'checkpoint_refused', at, reason: `protected path changed by ${effect.taskId}` };
        if (outcome === 'checkpoint-infra') return { type: 'infra_error', at, error: 'checkpoint failed: push rejected' };
        return { type: 'checkpointed', at, sha: shaOf(effect.taskId, effect.attempt) };
      }
      case 'final_gate': {
        const passed = gates.shift() ?? true;
        return { type: 'gate_done', at, passed, output: passed ? 'all checks passed' : 'npm test exited with code 1' };
      }
      default:
        return undefined;
    }
  }
}

const executedIds = (r: Run) => r.executed.map((e) => e.taskId);
const task = (s: LoopState, id: string) => s.tasks.find((t) => t.id === id)!;
const effectTypes = (d: Decision) => d.effects.map((e) => e.type);
const clone = <T>(v: T): T => structuredClone(v);

/** Decides a sequence of events from a state, returning every decision. */
function feed(from: LoopState, ...events: LoopEvent[]): Decision[] {
  const out: Decision[] = [];
  let state = from;
  for (const e of events) {
    const d = decide(state, e);
    out.push(d);
    state = d.state;
  }
  return out;
}
const start = (at = 1000, checkpoints: Array<{ taskId: string; sha: string }> = []): LoopEvent => ({ type: 'start', at, checkpoints });

// ---------------------------------------------------------------------------------------------

describe('states', () => {
  it('are exactly the states of DESIGN.md section 1', () => {
    expect([...GOAL_STATES].sort()).toEqual(
      [
        'INITIALIZING',
        'DECOMPOSING',
        'AWAITING_APPROVAL',
        'TASK_PENDING',
        'EXECUTING',
        'EVALUATING',
        'STATE_COMMIT',
        'REPAIR_LOOP',
        'ESCALATED',
        'FINAL_GATE',
        'LOOP_COMPLETE',
        'PAUSED',
        'STOPPED',
        'FAILED',
      ].sort(),
    );
  });

  it('the loop rests where a human is needed or the goal is over, and only there', () => {
    expect([...RESTING_STATES].sort()).toEqual(['AWAITING_APPROVAL', 'ESCALATED', 'FAILED', 'LOOP_COMPLETE', 'PAUSED', 'STOPPED']);
  });

  it('done and skipped tasks are settled; nothing else is', () => {
    expect(TASK_STATUSES.filter(isSettled).sort()).toEqual(['done', 'skipped']);
  });
});

describe('initialState', () => {
  it('starts INITIALIZING with fresh run counters and the given goal counters', () => {
    const s = initialState({
      tasks: [view('a', [], { attempts: 4 })],
      limits: limits(),
      startedAtMs: 123,
      counters: { iterations: 7, costUsd: 1.5 },
    });
    expect(s.phase).toBe('INITIALIZING');
    expect(s.startedAtMs).toBe(123);
    expect(s.tasks[0]).toMatchObject({ attempts: 4, runAttempts: 0, runFailures: 0 });
    expect(s.counters).toEqual({ iterations: 7, consecutiveErrors: 0, errors: 0, errorsRecovered: 0, costUsd: 1.5 });
    expect(s.escalation).toBeUndefined();
    expect(s.stopReason).toBeUndefined();
  });
});

describe('start', () => {
  it('goes INITIALIZING -> DECOMPOSING -> TASK_PENDING -> EXECUTING on the first task', () => {
    const d = decide(stateOf([view('a'), view('b', ['a'])]), start());
    expect(d.transitions.map((t) => [t.from, t.to])).toEqual([
      ['INITIALIZING', 'DECOMPOSING'],
      ['DECOMPOSING', 'TASK_PENDING'],
      ['TASK_PENDING', 'EXECUTING'],
    ]);
    expect(d.state.phase).toBe('EXECUTING');
    expect(d.state.currentTaskId).toBe('a');
    expect(d.effects).toEqual([{ type: 'execute', taskId: 'a', attempt: 1 }]);
    expect(task(d.state, 'a')).toMatchObject({ status: 'running', attempts: 1 });
    expect(d.state.counters.iterations).toBe(1);
  });

  it('with checkpoints, marks those tasks done (resume) and works the first unfinished one', () => {
    const d = decide(
      stateOf([view('a'), view('b', ['a']), view('c', ['b'])]),
      start(1000, [
        { taskId: 'a', sha: 'aaa1111' },
        { taskId: 'b', sha: 'bbb2222' },
      ]),
    );
    expect(task(d.state, 'a')).toMatchObject({ status: 'done', checkpointSha: 'aaa1111' });
    expect(task(d.state, 'b')).toMatchObject({ status: 'done', checkpointSha: 'bbb2222' });
    expect(d.effects).toEqual([{ type: 'execute', taskId: 'c', attempt: 1 }]);
    expect(d.state.counters.iterations).toBe(1);
  });

  it('with every task checkpointed, goes straight to the final gate without executing anything', () => {
    const d = decide(
      stateOf([view('a'), view('b', ['a'])]),
      start(1000, [
        { taskId: 'a', sha: 'a1' },
        { taskId: 'b', sha: 'b1' },
      ]),
    );
    expect(d.state.phase).toBe('FINAL_GATE');
    expect(d.effects).toEqual([{ type: 'final_gate' }]);
    expect(d.state.counters.iterations).toBe(0);
  });

  it('git is the truth: a task the ledger called done but without a checkpoint runs again', () => {
    const d = decide(stateOf([view('a', [], { status: 'done', checkpointSha: 'gone' }), view('b', ['a'])]), start());
    expect(d.effects).toEqual([{ type: 'execute', taskId: 'a', attempt: 1 }]);
    expect(task(d.state, 'a').checkpointSha).toBeUndefined();
  });

  it('a skipped task stays skipped and unblocks its dependents', () => {
    const d = decide(stateOf([view('a', [], { status: 'skipped' }), view('b', ['a'])]), start());
    expect(task(d.state, 'a').status).toBe('skipped');
    expect(d.effects).toEqual([{ type: 'execute', taskId: 'b', attempt: 1 }]);
  });

  it('attempt numbers continue over the goal life (GOAL_ATTEMPT is 1-based and never reused)', () => {
    const d = decide(stateOf([view('a', [], { attempts: 3 })]), start());
    expect(d.effects).toEqual([{ type: 'execute', taskId: 'a', attempt: 4 }]);
  });
});

describe('scheduling', () => {
  it('picks the next ready task; ties keep spec order', () => {
    // c is listed first but waits for a; once a is done, c and b are both ready and c comes first.
    const r = drive(stateOf([view('c', ['a']), view('a'), view('b')]));
    expect(executedIds(r)).toEqual(['a', 'c', 'b']);
    expect(r.state.phase).toBe('LOOP_COMPLETE');
  });

  it('runs every task after its dependencies (diamond)', () => {
    const r = drive(stateOf([view('join', ['left', 'right']), view('right', ['root']), view('left', ['root']), view('root')]));
    expect(executedIds(r)).toEqual(['root', 'right', 'left', 'join']);
  });
});

describe('pass -> checkpoint -> next task', () => {
  it('executed ok -> EVALUATING and verify the same attempt', () => {
    const [, d] = feed(stateOf([view('a'), view('b')]), start(), { type: 'executed', at: 2000, ok: true });
    expect(d!.state.phase).toBe('EVALUATING');
    expect(d!.effects).toEqual([{ type: 'verify', taskId: 'a', attempt: 1 }]);
  });

  it('verified -> STATE_COMMIT and checkpoint the same attempt', () => {
    const [, , d] = feed(stateOf([view('a'), view('b')]), start(), { type: 'executed', at: 2000, ok: true }, { type: 'verified', at: 3000, passed: true, output: 'ok' });
    expect(d!.state.phase).toBe('STATE_COMMIT');
    expect(d!.effects).toEqual([{ type: 'checkpoint', taskId: 'a', attempt: 1, evidence: 'unchecked' }]);
  });

  it('checkpointed -> task done with its sha, reported, and the next task starts', () => {
    const [, , , d] = feed(
      stateOf([view('a'), view('b')]),
      start(),
      { type: 'executed', at: 2000, ok: true },
      { type: 'verified', at: 3000, passed: true, output: 'ok' },
      { type: 'checkpointed', at: 4000, sha: 'abcdef1234567' },
    );
    expect(task(d!.state, 'a')).toMatchObject({ status: 'done', checkpointSha: 'abcdef1234567' });
    expect(d!.effects).toEqual([
      { type: 'checkpointed', taskId: 'a', sha: 'abcdef1234567' },
      { type: 'execute', taskId: 'b', attempt: 1 },
    ]);
    expect(d!.transitions.map((t) => t.to)).toEqual(['TASK_PENDING', 'EXECUTING']);
    expect(d!.state.currentTaskId).toBe('b');
  });

  it('a goal whose tasks all pass completes, with one attempt and one checkpoint per task', () => {
    const r = drive(stateOf([view('a'), view('b', ['a']), view('c', ['a'])]));
    expect(r.state.phase).toBe('LOOP_COMPLETE');
    expect(executedIds(r)).toEqual(['a', 'b', 'c']);
    expect(r.effects.filter((e) => e.type === 'checkpointed').map((e) => (e as { taskId: string }).taskId)).toEqual(['a', 'b', 'c']);
    expect(r.state.tasks.every((t) => t.status === 'done' && t.checkpointSha)).toBe(true);
    expect(r.state.counters.iterations).toBe(3);
    expect(r.state.counters.errorsRecovered).toBe(0);
    expect(r.state.escalation).toBeUndefined();
    expect(r.effects.at(-1)).toEqual({ type: 'finish' });
  });

  it('every decision chains its transitions from the previous phase to the new one', () => {
    const r = drive(stateOf([view('a'), view('b', ['a'])], { limits: { error_threshold: 5 } }), { tasks: { a: ['fail', 'infra', 'pass'], b: ['refuse', 'pass'] } });
    let phase = 'INITIALIZING';
    for (const d of r.decisions) {
      for (const t of d.transitions) {
        expect(t.from).toBe(phase);
        phase = t.to;
      }
      expect(d.state.phase).toBe(phase);
    }
    expect(phase).toBe('LOOP_COMPLETE');
  });
});

describe('fail -> rollback and retry', () => {
  it('a failed verification rolls back and retries the task, passing the failure along', () => {
    const [, , d] = feed(stateOf([view('a'), view('b')]), start(), { type: 'executed', at: 2000, ok: true }, { type: 'verified', at: 3000, passed: false, output: 'expected 2, got 3' });
    expect(d!.transitions.map((t) => t.to)).toEqual(['REPAIR_LOOP', 'EXECUTING']);
    expect(d!.effects).toEqual([{ type: 'rollback' }, { type: 'execute', taskId: 'a', attempt: 2, previousFailure: 'expected 2, got 3' }]);
    expect(task(d!.state, 'a')).toMatchObject({ status: 'running', attempts: 2, lastError: 'expected 2, got 3' });
  });

  it('a failed run step is a failed attempt too', () => {
    const [, d] = feed(stateOf([view('a')]), start(), { type: 'executed', at: 2000, ok: false, kind: 'task', error: 'npm install exited 1' });
    expect(d!.effects).toEqual([{ type: 'rollback' }, { type: 'execute', taskId: 'a', attempt: 2, previousFailure: 'npm install exited 1' }]);
  });

  it('a repaired task completes, and each retry sees the previous failure', () => {
    const r = drive(stateOf([view('a'), view('b', ['a'])]), { tasks: { a: ['fail', 'run-fail', 'pass'] } });
    expect(r.state.phase).toBe('LOOP_COMPLETE');
    expect(r.executed).toEqual([
      { type: 'execute', taskId: 'a', attempt: 1 },
      { type: 'execute', taskId: 'a', attempt: 2, previousFailure: failureText('a', 1) },
      { type: 'execute', taskId: 'a', attempt: 3, previousFailure: runFailureText('a', 2) },
      { type: 'execute', taskId: 'b', attempt: 1 },
    ]);
    expect(task(r.state, 'a').lastError).toBeUndefined();
  });

  it('checkpoint_refused counts as a failed attempt', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 2 })]), { tasks: { a: ['refuse', 'pass'] } });
    expect(r.state.phase).toBe('LOOP_COMPLETE');
    expect(r.executed[1]).toEqual({ type: 'execute', taskId: 'a', attempt: 2, previousFailure: 'protected path changed by a' });
    expect(r.state.counters.errorsRecovered).toBe(1);

    const refused = drive(stateOf([view('a', [], { maxRetries: 2 })]), { tasks: { a: ['refuse', 'refuse'] } });
    expect(refused.state.phase).toBe('ESCALATED');
    expect(refused.state.escalation).toEqual({ task_id: 'a', attempts: 2, last_error: 'protected path changed by a' });
  });
});

describe('escalation', () => {
  it('max_retries counts attempts: max_retries 3 means at most 3 attempts, then ESCALATED', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 3 })]), { tasks: { a: ['fail', 'fail', 'fail', 'pass'] } });
    expect(r.executed.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(r.state.phase).toBe('ESCALATED');
    expect(r.state.escalation).toEqual({ task_id: 'a', attempts: 3, last_error: failureText('a', 3) });
    expect(task(r.state, 'a').status).toBe('escalated');
    expect(r.state.stopReason).toContain('a');
  });

  it('max_retries 1 means a single attempt', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 1 })]), { tasks: { a: ['fail', 'pass'] } });
    expect(r.executed).toHaveLength(1);
    expect(r.state.phase).toBe('ESCALATED');
  });

  it('the escalating decision rolls back, reports the escalation and finishes', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 2 })]), { tasks: { a: ['fail', 'run-fail'] } });
    const last = r.decisions.at(-1)!;
    const escalation = { task_id: 'a', attempts: 2, last_error: runFailureText('a', 2) };
    expect(last.effects).toEqual([{ type: 'rollback', bestEffort: true }, { type: 'escalate', escalation }, { type: 'finish' }]);
    expect(last.transitions.at(-1)).toMatchObject({ to: 'ESCALATED' });
    expect(last.state.escalation).toEqual(escalation);
  });

  it('with on_escalation: stop, nothing else starts after an escalation (the old behaviour)', () => {
    const r = drive({ ...stateOf([view('a'), view('b', ['a'], { maxRetries: 2 }), view('c', ['b']), view('d', ['c']), view('e')]), onEscalation: 'stop' }, { tasks: { b: ['fail', 'fail'] } });
    expect(r.state.phase).toBe('ESCALATED');
    expect(executedIds(r)).toEqual(['a', 'b', 'b']);
    expect(task(r.state, 'c').status).toBe('pending');
    expect(task(r.state, 'd').status).toBe('pending');
    expect(task(r.state, 'e').status).toBe('pending');
    expect(r.effects.some((e) => e.type === 'final_gate')).toBe(false);
    expect(r.state.escalation).toEqual({ task_id: 'b', attempts: 2, last_error: failureText('b', 2) });
    expect(r.decisions.at(-1)!.effects).toEqual([{ type: 'rollback', bestEffort: true }, { type: 'escalate', escalation: r.state.escalation }, { type: 'finish' }]);
  });
  it('a per-task max_retries wins over the default', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 5 })], { limits: { max_retries: 2 } }), { tasks: { a: ['fail', 'fail', 'fail', 'fail', 'pass'] } });
    expect(r.state.phase).toBe('LOOP_COMPLETE');
    expect(r.executed).toHaveLength(5);
  });

  it('a resumed task gets a fresh set of attempts in the new run', () => {
    const r = drive(stateOf([view('a', [], { attempts: 3, maxRetries: 2 })]), { tasks: { a: ['fail', 'fail'] } });
    expect(r.executed.map((e) => e.attempt)).toEqual([4, 5]);
    expect(r.state.escalation).toMatchObject({ task_id: 'a', attempts: 2 });
  });
});

describe('an escalated task blocks only its dependents (on_escalation: continue, the default)', () => {
  const graph = () => [view('a', [], { maxRetries: 1 }), view('b'), view('c', ['a']), view('d', ['c']), view('e', ['b'])];

  it.each([
    { name: 'default (absent)', policy: undefined },
    { name: 'continue', policy: 'continue' as const },
  ])('$name: independent tasks run and are checkpointed; dependents (transitively) do not; no final gate', ({ policy }) => {
    const r = drive({ ...stateOf(graph()), ...(policy ? { onEscalation: policy } : {}) }, { tasks: { a: ['fail'] } });
    expect(executedIds(r)).toEqual(['a', 'b', 'e']);
    expect(r.state.phase).toBe('ESCALATED');
    expect(task(r.state, 'a').status).toBe('escalated');
    expect(['b', 'e'].map((id) => task(r.state, id).status)).toEqual(['done', 'done']);
    expect(r.effects.filter((e) => e.type === 'checkpointed').map((e) => (e as { taskId: string }).taskId)).toEqual(['b', 'e']);
    expect(['c', 'd'].map((id) => task(r.state, id).status)).toEqual(['pending', 'pending']);
    expect(r.effects.some((e) => e.type === 'final_gate')).toBe(false);
    expect(r.state.escalation).toEqual({
      task_id: 'a',
      attempts: 1,
      last_error: failureText('a', 1),
      blocked: ['c', 'd'],
      done_meanwhile: ['b', 'e'],
    });
    expect(r.state.stopReason).toBe('task a failed after 1 attempt(s); blocked: c, d');
  });

  it('the escalate effect comes once, when the goal comes to rest, after the work went on', () => {
    const r = drive(stateOf(graph()), { tasks: { a: ['fail'] } });
    const escalates = r.decisions.filter((d) => d.effects.some((e) => e.type === 'escalate'));
    expect(escalates).toHaveLength(1);
    expect(escalates[0]).toBe(r.decisions.at(-1));
    // The last task's checkpoint report, then the one escalation (no rollback: e was just checkpointed).
    expect(r.decisions.at(-1)!.effects).toEqual([{ type: 'checkpointed', taskId: 'e', sha: expect.any(String) }, { type: 'escalate', escalation: r.state.escalation }, { type: 'finish' }]);
    expect(r.decisions.filter((d) => d.effects.some((e) => e.type === 'finish'))).toHaveLength(1);
  });

  it('the escalating decision rolls back (not best effort: the work goes on) and starts the next independent task', () => {
    const r = drive(stateOf(graph()), { tasks: { a: ['fail'] } });
    const d = r.decisions.find((x) => x.state.tasks.some((t) => t.status === 'escalated'))!;
    expect(d.effects).toEqual([{ type: 'rollback' }, { type: 'execute', taskId: 'b', attempt: 1 }]);
    expect(d.transitions.map((t) => t.to)).toEqual(['REPAIR_LOOP', 'TASK_PENDING', 'EXECUTING']);
    expect(d.state.escalation).toEqual({ task_id: 'a', attempts: 1, last_error: failureText('a', 1) });
  });

  it('when nothing independent is left, the escalating decision rests at once (best-effort rollback)', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 1 }), view('b', ['a'])]), { tasks: { a: ['fail'] } });
    expect(r.state.phase).toBe('ESCALATED');
    expect(r.decisions.at(-1)!.effects.map((e) => e.type)).toEqual(['rollback', 'escalate', 'finish']);
    expect(r.decisions.at(-1)!.effects[0]).toEqual({ type: 'rollback', bestEffort: true });
    expect(r.state.escalation).toEqual({ task_id: 'a', attempts: 1, last_error: failureText('a', 1), blocked: ['b'] });
  });

  it('several tasks escalate: the first is the escalation, the others are listed, their dependents all blocked', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 1 }), view('b', [], { maxRetries: 2 }), view('c', ['a']), view('d', ['b']), view('e')]), {
      tasks: { a: ['fail'], b: ['fail', 'fail'] },
    });
    expect(executedIds(r)).toEqual(['a', 'b', 'b', 'e']);
    expect(r.state.phase).toBe('ESCALATED');
    expect(r.state.escalation).toEqual({
      task_id: 'a',
      attempts: 1,
      last_error: failureText('a', 1),
      also_escalated: ['b'],
      blocked: ['c', 'd'],
      done_meanwhile: ['e'],
    });
    expect(r.effects.filter((e) => e.type === 'escalate')).toHaveLength(1);
    expect(r.state.stopReason).toBe('task a failed after 1 attempt(s); also escalated: b; blocked: c, d');
  });

  it('a task that depends on an escalated task and on a done one stays blocked; a skipped task does not count as blocked', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 1 }), view('b'), view('c', ['a', 'b']), view('s', ['a'], { status: 'skipped' })]), { tasks: { a: ['fail'] } });
    expect(executedIds(r)).toEqual(['a', 'b']);
    expect(r.state.escalation?.blocked).toEqual(['c']);
  });

  it('a safeguard that trips while working independent tasks still rests in ESCALATED, naming it', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 1 }), view('b'), view('c')], { limits: { max_iterations: 2 } }), { tasks: { a: ['fail'] } });
    expect(executedIds(r)).toEqual(['a', 'b']);
    expect(r.state.phase).toBe('ESCALATED');
    expect(task(r.state, 'c').status).toBe('pending');
    expect(r.state.stopReason).toBe('task a failed after 1 attempt(s); independent work stopped: max_iterations reached (2)');
    expect(r.effects.filter((e) => e.type === 'escalate')).toHaveLength(1);
  });

  it('the circuit breaker after an escalation rests in ESCALATED too, the interrupted task back to pending', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 1 }), view('b')], { limits: { error_threshold: 2 } }), { tasks: { a: ['fail'], b: ['infra', 'infra'] } });
    expect(r.state.phase).toBe('ESCALATED');
    expect(task(r.state, 'b').status).toBe('pending');
    expect(r.state.stopReason).toMatch(/^task a failed after 1 attempt\(s\); independent work stopped: circuit breaker/);
  });

  it('a task that needs approval is not started while an escalation is pending: approval is asked when the goal rests', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 1 }), view('r', [], { risk: 'critical' }), view('b')]), { tasks: { a: ['fail'] } });
    expect(executedIds(r)).toEqual(['a', 'b']);
    expect(r.state.phase).toBe('ESCALATED');
    expect(task(r.state, 'r').status).toBe('awaiting_approval');
    expect(r.decisions.at(-1)!.effects.map((e) => e.type)).toEqual(['checkpointed', 'request_approval', 'escalate', 'finish']);
    expect(r.decisions.at(-1)!.effects).toContainEqual({ type: 'request_approval', taskIds: ['r'] });
  });

  it('a human pause while working independent tasks is honoured as before', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 1 }), view('b'), view('c')]), { tasks: { a: ['fail'] } });
    const mid = r.decisions.find((x) => x.effects.some((e) => e.type === 'execute' && e.taskId === 'b'))!.state;
    const d = decide(mid, { type: 'interrupted', at: 99_000, request: 'pause', reason: 'paused by a human' });
    expect(d.state.phase).toBe('PAUSED');
    expect(effectTypes(d)).not.toContain('escalate');
  });

  it('a new run forgets the escalation and retries the escalated task first', () => {
    const r = drive(stateOf(graph()), { tasks: { a: ['fail'] } });
    const again = decide(
      r.state,
      start(r.now + 1000, [
        { taskId: 'b', sha: 'b'.repeat(40) },
        { taskId: 'e', sha: 'e'.repeat(40) },
      ]),
    );
    expect(again.state.escalation).toBeUndefined();
    expect(again.effects).toContainEqual({ type: 'execute', taskId: 'a', attempt: 2 });
  });

  it('setup failure and final-gate failure still escalate at once', () => {
    const setup = decide(stateOf(graph()), { type: 'start', at: 1000, checkpoints: [], setupFailure: 'npm ci exited 1' });
    expect(setup.state.phase).toBe('ESCALATED');
    expect(effectTypes(setup)).not.toContain('execute');
    const gate = drive(stateOf([view('a'), view('b')]), { gate: [false] });
    expect(gate.state.phase).toBe('ESCALATED');
    expect(gate.state.escalation).toEqual({ task_id: 'final-gate', attempts: 1, last_error: 'npm test exited with code 1' });
  });
});

describe('infrastructure errors and the circuit breaker', () => {
  it('an infra error does not use up the task retries', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 2 })], { limits: { error_threshold: 10 } }), {
      tasks: { a: ['fail', 'infra', 'checkpoint-infra', 'infra', 'pass'] },
    });
    expect(r.state.phase).toBe('LOOP_COMPLETE');
    expect(r.executed).toHaveLength(5);
    expect(r.state.counters.errors).toBe(3);
  });

  it('escalation counts only the real attempts', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 2 })], { limits: { error_threshold: 10 } }), { tasks: { a: ['infra', 'fail', 'infra', 'fail'] } });
    expect(r.state.phase).toBe('ESCALATED');
    expect(r.executed).toHaveLength(4);
    expect(r.state.escalation).toMatchObject({ task_id: 'a', attempts: 2, last_error: failureText('a', 4) });
  });

  it('an infra error rolls back and retries; the task is not escalated', () => {
    const [, d] = feed(stateOf([view('a', [], { maxRetries: 1 })]), start(), { type: 'executed', at: 2000, ok: false, kind: 'infra', error: 'spawn EAGAIN' });
    expect(effectTypes(d!)).toEqual(['rollback', 'execute']);
    expect(d!.state.phase).toBe('EXECUTING');
    expect(d!.state.escalation).toBeUndefined();
  });

  it('error_threshold consecutive infra errors trip the circuit breaker: STOPPED, naming it', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 10 })], { limits: { error_threshold: 3 } }), { tasks: { a: ['infra', 'infra', 'infra', 'pass'] } });
    expect(r.state.phase).toBe('STOPPED');
    expect(r.executed).toHaveLength(3);
    expect(r.state.stopReason).toMatch(/circuit breaker/);
    expect(r.state.stopReason).toMatch(/3/);
    expect(r.state.escalation).toBeUndefined();
    expect(task(r.state, 'a').status).toBe('pending');
    const last = r.decisions.at(-1)!;
    expect(effectTypes(last)).toEqual(['rollback', 'finish']);
  });

  it('infra errors from any phase count (here: the checkpoint push)', () => {
    const r = drive(stateOf([view('a')], { limits: { error_threshold: 2 } }), { tasks: { a: ['checkpoint-infra', 'checkpoint-infra'] } });
    expect(r.state.phase).toBe('STOPPED');
    expect(r.state.stopReason).toMatch(/circuit breaker/);
  });

  it('the count is of consecutive errors: a passed task resets it', () => {
    const r = drive(stateOf([view('a'), view('b'), view('c')], { limits: { error_threshold: 2 } }), {
      tasks: { a: ['infra', 'pass'], b: ['infra', 'pass'], c: ['infra', 'pass'] },
    });
    expect(r.state.phase).toBe('LOOP_COMPLETE');
    expect(r.state.counters.errors).toBe(3);
  });

  it('an infra error event (e.g. a failed verification run) returns the task to the queue', () => {
    const [, d] = feed(stateOf([view('a'), view('b')], { limits: { error_threshold: 2 } }), start(), { type: 'infra_error', at: 2000, error: 'sandbox failed' });
    expect(d!.effects).toEqual([{ type: 'rollback' }, { type: 'execute', taskId: 'a', attempt: 2 }]);
  });
});

describe('safeguards stop the loop', () => {
  it('max_iterations: attempts over the whole goal', () => {
    const r = drive(stateOf([view('a'), view('b'), view('c')], { limits: { max_iterations: 2 } }));
    expect(executedIds(r)).toEqual(['a', 'b']);
    expect(r.state.phase).toBe('STOPPED');
    expect(r.state.stopReason).toMatch(/max_iterations/);
    expect(task(r.state, 'c').status).toBe('pending');
  });

  it('max_iterations also bounds the retries of one task, and wins over escalation', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 5 })], { limits: { max_iterations: 2 } }), { tasks: { a: ['fail', 'fail', 'fail'] } });
    expect(r.executed).toHaveLength(2);
    expect(r.state.phase).toBe('STOPPED');
    expect(r.state.stopReason).toMatch(/max_iterations/);
    expect(task(r.state, 'a').status).toBe('pending');
  });

  it('max_iterations counts the iterations of earlier runs of the goal', () => {
    const r = drive(stateOf([view('a'), view('b')], { limits: { max_iterations: 5 }, counters: { iterations: 4 } }));
    expect(executedIds(r)).toEqual(['a']);
    expect(r.state.phase).toBe('STOPPED');
    expect(r.state.counters.iterations).toBe(5);
  });

  it('cost_cap_usd: the spend reported by executions stops the loop before the next task', () => {
    const r = drive(stateOf([view('a'), view('b'), view('c')], { limits: { cost_cap_usd: 1 } }), { costPerExecute: 0.6 });
    expect(executedIds(r)).toEqual(['a', 'b']);
    expect(r.state.counters.costUsd).toBeCloseTo(1.2);
    expect(r.state.phase).toBe('STOPPED');
    expect(r.state.stopReason).toMatch(/cost_cap_usd/);
  });

  it('cost_cap_usd is checked before a retry too', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 5 })], { limits: { cost_cap_usd: 1 } }), { costPerExecute: 0.5, tasks: { a: ['fail', 'fail', 'fail'] } });
    expect(r.executed).toHaveLength(2);
    expect(r.state.stopReason).toMatch(/cost_cap_usd/);
  });

  it('a budget failure reported by the agent stops the loop and rolls back', () => {
    const [, d] = feed(stateOf([view('a')]), start(), { type: 'executed', at: 2000, ok: false, kind: 'budget', error: 'cost_cap_usd reached ($5.01 of $5)', costUsd: 5.01 });
    expect(d!.state.phase).toBe('STOPPED');
    expect(d!.state.stopReason).toMatch(/cost_cap_usd/);
    expect(effectTypes(d!)).toEqual(['rollback', 'finish']);
    expect(d!.state.counters.costUsd).toBeCloseTo(5.01);
    expect(task(d!.state, 'a').status).toBe('pending');
  });

  it('max_wall_minutes: the clock of the events stops the loop before the next task', () => {
    // Each event is 25 s apart; one task takes three events; the cap is one minute.
    const r = drive(stateOf([view('a'), view('b'), view('c')], { limits: { max_wall_minutes: 1 }, startedAtMs: 1_000_000 }), { tick: 25_000 });
    expect(r.state.phase).toBe('STOPPED');
    expect(r.state.stopReason).toMatch(/max_wall_minutes/);
    expect(r.executed.length).toBeLessThan(3);
    expect(r.executed.length).toBeGreaterThanOrEqual(1);
  });

  it('max_wall_minutes is checked before a retry too', () => {
    const [, , d] = feed(
      stateOf([view('a')], { limits: { max_wall_minutes: 1 }, startedAtMs: 0 }),
      start(1000),
      { type: 'executed', at: 2000, ok: true },
      { type: 'verified', at: 61_000, passed: false, output: 'nope' },
    );
    expect(d!.state.phase).toBe('STOPPED');
    expect(d!.state.stopReason).toMatch(/max_wall_minutes/);
    expect(effectTypes(d!)).not.toContain('execute');
  });

  it('is not tripped below the limits', () => {
    const r = drive(stateOf([view('a'), view('b')], { limits: { max_iterations: 2, cost_cap_usd: 2, max_wall_minutes: 10 } }), { costPerExecute: 0.5, tick: 60_000 });
    expect(r.state.phase).toBe('LOOP_COMPLETE');
  });
});

describe('approval', () => {
  it('a task whose risk exceeds max_risk waits in AWAITING_APPROVAL', () => {
    const d = decide(stateOf([view('a', [], { risk: 'critical' })], { limits: { max_risk: 'high' } }), start());
    expect(d.state.phase).toBe('AWAITING_APPROVAL');
    expect(d.effects).toEqual([{ type: 'request_approval', taskIds: ['a'] }, { type: 'finish' }]);
    expect(task(d.state, 'a').status).toBe('awaiting_approval');
    expect(task(d.state, 'a').attempts).toBe(0);
    expect(d.state.counters.iterations).toBe(0);
    expect(d.state.stopReason).toContain('a');
  });

  it('risk equal to max_risk runs; any level above it waits', () => {
    expect(decide(stateOf([view('a', [], { risk: 'high' })], { limits: { max_risk: 'high' } }), start()).state.phase).toBe('EXECUTING');
    expect(decide(stateOf([view('a', [], { risk: 'medium' })], { limits: { max_risk: 'low' } }), start()).state.phase).toBe('AWAITING_APPROVAL');
    expect(decide(stateOf([view('a', [], { risk: 'low' })], { limits: { max_risk: 'low' } }), start()).state.phase).toBe('EXECUTING');
  });

  it('requires_approval waits whatever the risk', () => {
    const d = decide(stateOf([view('a', [], { requiresApproval: true })], { limits: { max_risk: 'critical' } }), start());
    expect(d.state.phase).toBe('AWAITING_APPROVAL');
  });

  it('an approved task runs', () => {
    const d = decide(stateOf([view('a', [], { risk: 'critical', requiresApproval: true, approved: true })]), start());
    expect(d.state.phase).toBe('EXECUTING');
    expect(d.effects).toEqual([{ type: 'execute', taskId: 'a', attempt: 1 }]);
  });

  it('the loop stops at the risky task after finishing the ones before it, and resumes once approved', () => {
    const r = drive(stateOf([view('a'), view('b', ['a'], { risk: 'critical' }), view('c', ['b'])]));
    expect(r.state.phase).toBe('AWAITING_APPROVAL');
    expect(executedIds(r)).toEqual(['a']);
    expect(r.effects).toContainEqual({ type: 'request_approval', taskIds: ['b'] });

    const approved: LoopState = { ...r.state, tasks: r.state.tasks.map((t) => (t.id === 'b' ? { ...t, approved: true } : t)) };
    const sha = task(r.state, 'a').checkpointSha!;
    const resumed = drive(approved, { checkpoints: [{ taskId: 'a', sha }] });
    expect(resumed.state.phase).toBe('LOOP_COMPLETE');
    expect(executedIds(resumed)).toEqual(['b', 'c']);
  });
});

describe('interruptions', () => {
  const running = () => decide(stateOf([view('a'), view('b')]), start()).state;

  it('pause while executing -> PAUSED, rolled back, the task back to pending', () => {
    const d = decide(running(), { type: 'interrupted', at: 2000, request: 'pause', reason: 'paused by a human' });
    expect(d.state.phase).toBe('PAUSED');
    expect(d.state.stopReason).toBe('paused by a human');
    expect(effectTypes(d)).toEqual(['rollback', 'finish']);
    expect(task(d.state, 'a').status).toBe('pending');
  });

  it('stop while evaluating -> STOPPED, rolled back', () => {
    const [, evaluating] = feed(stateOf([view('a')]), start(), { type: 'executed', at: 2000, ok: true });
    const d = decide(evaluating!.state, { type: 'interrupted', at: 3000, request: 'stop', reason: 'stopped by the user (signal)' });
    expect(d.state.phase).toBe('STOPPED');
    expect(d.state.stopReason).toBe('stopped by the user (signal)');
    expect(effectTypes(d)).toEqual(['rollback', 'finish']);
  });

  it('an interruption is not a failed attempt: nothing escalates, no retry is used', () => {
    const d = decide(running(), { type: 'interrupted', at: 2000, request: 'stop', reason: 'max_wall_minutes reached (1)' });
    expect(d.state.escalation).toBeUndefined();
    expect(task(d.state, 'a').lastError).toBeUndefined();
    expect(d.state.stopReason).toMatch(/max_wall_minutes/);
  });

  it('with no task running there is nothing to roll back', () => {
    const idle: LoopState = { ...stateOf([view('a')]), phase: 'TASK_PENDING' };
    const d = decide(idle, { type: 'interrupted', at: 2000, request: 'pause', reason: 'paused by a human' });
    expect(d.state.phase).toBe('PAUSED');
    expect(effectTypes(d)).toEqual(['finish']);
  });
});

describe('final gate', () => {
  it('runs when every task is settled; pass -> LOOP_COMPLETE', () => {
    const r = drive(stateOf([view('a'), view('b', [], { status: 'skipped' })]));
    expect(r.effects.filter((e) => e.type === 'final_gate')).toHaveLength(1);
    const last = r.decisions.at(-1)!;
    expect(last.transitions.map((t) => [t.from, t.to])).toEqual([['FINAL_GATE', 'LOOP_COMPLETE']]);
    expect(last.effects).toEqual([{ type: 'finish' }]);
  });

  it('fail -> ESCALATED on the final-gate pseudo task, with the gate output', () => {
    const r = drive(stateOf([view('a')]), { gate: [false] });
    expect(r.state.phase).toBe('ESCALATED');
    expect(FINAL_GATE_TASK).toBe('final-gate');
    expect(r.state.escalation).toEqual({ task_id: 'final-gate', attempts: 1, last_error: 'npm test exited with code 1' });
    expect(r.decisions.at(-1)!.effects).toContainEqual({ type: 'escalate', escalation: r.state.escalation });
    // The tasks' own work stays done.
    expect(task(r.state, 'a').status).toBe('done');
  });
});

describe('errors_recovered', () => {
  it('counts the failures of tasks that later passed', () => {
    const r = drive(stateOf([view('a'), view('b'), view('c')]), { tasks: { a: ['fail', 'fail', 'pass'], b: ['run-fail', 'pass'], c: ['pass'] } });
    expect(r.state.phase).toBe('LOOP_COMPLETE');
    expect(r.state.counters.errorsRecovered).toBe(3);
  });

  it('does not count the failures of an escalated task, nor infrastructure errors', () => {
    const r = drive(stateOf([view('a'), view('b', [], { maxRetries: 2 })], { limits: { error_threshold: 5 } }), {
      tasks: { a: ['infra', 'fail', 'pass'], b: ['fail', 'fail'] },
    });
    expect(r.state.phase).toBe('ESCALATED');
    expect(r.state.counters.errorsRecovered).toBe(1);
  });

  it('adds to the count of earlier runs', () => {
    const r = drive(stateOf([view('a')], { counters: { errorsRecovered: 4 } }), { tasks: { a: ['fail', 'pass'] } });
    expect(r.state.counters.errorsRecovered).toBe(5);
  });
});

describe('decide is pure', () => {
  it('does not modify the state it is given', () => {
    const r = drive(stateOf([view('a'), view('b', ['a'], { risk: 'critical' })], { limits: { error_threshold: 5 } }), { tasks: { a: ['fail', 'infra', 'pass'] } });
    let state = stateOf([view('a'), view('b', ['a'], { risk: 'critical' })], { limits: { error_threshold: 5 } });
    for (const event of r.events) {
      const before = clone(state);
      const d = decide(state, event);
      expect(state).toEqual(before);
      state = d.state;
    }
  });

  it('gives the same decision for the same state and event', () => {
    const s = stateOf([view('a'), view('b')]);
    expect(decide(clone(s), start(5))).toEqual(decide(clone(s), start(5)));
  });
});

describe('events after the loop has come to rest', () => {
  // The adapters perform the effects of a decision in order and report the first event one of
  // them produces. A resting decision can still carry a `rollback`; when that rollback fails, the
  // adapter reports an `infra_error`. That must not restart work the loop has just given up on.

  it('a failed rollback after an escalation does not give the escalated task another attempt', () => {
    const r = drive(stateOf([view('a', [], { maxRetries: 2 }), view('b', ['a'])]), { tasks: { a: ['fail', 'fail'] } });
    expect(r.state.phase).toBe('ESCALATED');
    expect(r.decisions.at(-1)!.effects[0]).toEqual({ type: 'rollback', bestEffort: true });
    const d = decide(r.state, { type: 'infra_error', at: r.now + 1000, error: 'rollback failed: git reset exited 128' });
    expect(effectTypes(d)).not.toContain('execute');
    expect(RESTING_STATES.has(d.state.phase)).toBe(true);
  });

  it('a failed rollback after a pause does not resume the work', () => {
    const paused = decide(decide(stateOf([view('a'), view('b')], { limits: { error_threshold: 3 } }), start()).state, {
      type: 'interrupted',
      at: 2000,
      request: 'pause',
      reason: 'paused by a human',
    }).state;
    expect(paused.phase).toBe('PAUSED');
    const d = decide(paused, { type: 'infra_error', at: 3000, error: 'rollback failed: index.lock exists' });
    expect(effectTypes(d)).not.toContain('execute');
    expect(RESTING_STATES.has(d.state.phase)).toBe(true);
  });

  it('a failed rollback after the circuit breaker tripped does not ask for the same rollback again (no endless loop)', () => {
    const r = drive(stateOf([view('a')], { limits: { error_threshold: 2 } }), { tasks: { a: ['infra', 'infra'] } });
    expect(r.state.phase).toBe('STOPPED');
    let state = r.state;
    // If every rollback keeps failing, the loop must still come to rest.
    for (let i = 0; i < 3; i++) {
      const d = decide(state, { type: 'infra_error', at: 10_000 + i, error: 'rollback failed: disk full' });
      state = d.state;
      if (!d.effects.some((e) => e.type === 'rollback' || e.type === 'execute')) return;
    }
    expect.fail('every failed rollback produced another rollback: the controller would loop forever');
  });
});
