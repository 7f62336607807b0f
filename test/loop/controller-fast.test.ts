import { describe, expect, it } from 'vitest';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { EXIT, exitCodeFor } from '../../src/goal/result.js';
import { GoalAbandonedError } from '../../src/loop/controller.js';
import { memoryGoalHarness } from '../helpers/memory-goal-harness.js';
import { ScriptedAgent } from '../helpers/scripted-agent.js';

// The fast tier: runGoal on in-memory ports (test/helpers/memory-*.ts, scripted-sandbox.ts), so
// the loop's behaviour is checked in seconds. What only real git, SQLite and processes can show
// is in controller.test.ts. Commands are the scripted sandbox's words (write, exists, fail, hang…).
const task = (id: string, extra: Record<string, unknown> = {}) => ({ id, title: `Task ${id}`, verification: 'true', ...extra });

describe('runGoal, fast tier (in-memory ledger, workspace and sandbox)', () => {
  it('checkpoints each verified task, in dependency order, then runs the final gate', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({
      goal_id: 'three',
      objective: 'three files',
      acceptance_criteria: [{ description: 'all files', check: 'exists a && exists b && exists c' }, 'a plain criterion'],
      tasks: [
        task('t-a', { run: 'write a', verification: 'exists a' }),
        task('t-c', { run: 'write c', verification: 'exists c', dependencies: ['t-b'] }),
        task('t-b', { run: 'write b', verification: 'exists b && exists a', dependencies: ['t-a'] }),
      ],
    });
    expect(result).toMatchObject({
      goal_id: 'three',
      status: 'LOOP_COMPLETE',
      success: true,
      tasks_completed: 3,
      tasks_total: 3,
      iterations: 3,
      errors_recovered: 0,
      branch: 'goal/three',
      stop_reason: null,
    });
    expect(h.remote.checkpointTasks('goal/three')).toEqual(['t-a', 't-b', 't-c']);
    expect(result.checkpoints.map((c) => c.sha)).toEqual(h.remote.log('goal/three').map((c) => c.sha));
    expect(h.forge.checkpoints.map((c) => c.taskId)).toEqual(['t-a', 't-b', 't-c']);
    expect(h.forge.states()).toContain('FINAL_GATE');
    const events = await h.ledger.listEvents(h.key('three'));
    expect(events.at(-1)).toMatchObject({ from: 'FINAL_GATE', to: 'LOOP_COMPLETE' });
    expect(events.map((e) => e.to)).toEqual(expect.arrayContaining(['DECOMPOSING', 'TASK_PENDING', 'EXECUTING', 'EVALUATING', 'STATE_COMMIT']));
    const attempts = await h.ledger.listAttempts(h.key('three'));
    expect(attempts.filter((a) => a.phase === 'gate')).toMatchObject([{ taskId: 'final-gate', passed: true }]);
    expect(await h.ledger.listTasks(h.key('three'))).toEqual(
      expect.arrayContaining([expect.objectContaining({ taskId: 't-b', status: 'done', attempts: 1, checkpointSha: result.checkpoints[1]!.sha })]),
    );
  });

  it('rolls a failed attempt back and feeds its failure to the next attempt, which repairs it', async () => {
    const h = memoryGoalHarness();
    const leftovers: boolean[] = [];
    const agent = new ScriptedAgent(({ attempt }) => {
      const files = h.workspace().files;
      leftovers.push(files.has('attempt-1.txt'));
      files.set(`attempt-${attempt}.txt`, 'x');
      files.set(attempt === 1 ? 'wrong-answer' : 'right-answer', 'x');
    });
    const result = await h.run({ goal_id: 'repair', objective: 'repair', tasks: [task('t1', { verification: 'exists right-answer' })] }, { agent });
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2, errors_recovered: 1 });
    expect(agent.calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(leftovers).toEqual([false, false]);
    expect(agent.calls[0]!.previousFailure).toBeUndefined();
    expect(agent.calls[1]!.previousFailure).toMatch(/verification .* exited with code 1/);
    expect(agent.calls[1]!.previousFailure).toContain('right-answer is missing');
    const [commit] = h.remote.log('goal/repair');
    expect(commit).toMatchObject({ taskId: 't1', attempt: 2 });
    expect([...commit!.files.keys()]).toEqual(expect.arrayContaining(['attempt-2.txt', 'right-answer']));
    expect([...commit!.files.keys()]).not.toContain('attempt-1.txt');
  });

  it('escalates after max_retries attempts, never runs dependents, and reports the last failure', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({
      goal_id: 'esc',
      objective: 'escalate',
      tasks: [
        task('ok', { run: 'write ok' }),
        task('broken', { run: 'write tries $GOAL_ATTEMPT', verification: 'fail still broken on attempt $GOAL_ATTEMPT', max_retries: 2, dependencies: ['ok'] }),
        task('after', { run: 'write after', dependencies: ['broken'] }),
        task('independent', { run: 'write i', dependencies: ['ok'] }),
      ],
      limits: { max_retries: 5 },
    });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation).toMatchObject({ task_id: 'broken', attempts: 2 });
    expect(result.escalation!.last_error).toContain('still broken on attempt 2');
    expect(result.stop_reason).toMatch(/broken failed after 2 attempt/);
    expect(h.forge.escalations).toHaveLength(1);
    const attempts = await h.ledger.listAttempts(h.key('esc'));
    expect(attempts.filter((a) => a.taskId === 'after')).toEqual([]);
    expect(attempts.filter((a) => a.taskId === 'broken').map((a) => a.attempt)).toEqual([1, 2]);
    // `independent` does not depend on the escalated task: it is worked before the goal rests.
    expect(h.remote.checkpointTasks('goal/esc')).toEqual(['ok', 'independent']);
    expect(h.workspace().files.has('tries')).toBe(false);
    const tasks = await h.ledger.listTasks(h.key('esc'));
    expect(tasks.find((t) => t.taskId === 'broken')).toMatchObject({ status: 'escalated', attempts: 2 });
    expect(tasks.find((t) => t.taskId === 'after')).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it('an escalated task blocks only its dependents: the independent task is checkpointed, then the goal rests in ESCALATED (on_escalation: stop does not go on)', async () => {
    const tasks = [
      task('a', { run: 'write a-tries $GOAL_ATTEMPT', verification: 'fail a never passes', max_retries: 1 }),
      task('b', { run: 'write b', verification: 'exists b && absent a-tries' }),
      task('c', { run: 'write c', dependencies: ['a'] }),
    ];
    const h = memoryGoalHarness();
    const result = await h.run({ goal_id: 'indep', objective: 'independent work', tasks });
    expect(result).toMatchObject({ status: 'ESCALATED', success: false, tasks_completed: 1, tasks_total: 3, iterations: 2 });
    expect(exitCodeFor(result.status)).toBe(EXIT.escalated);
    expect(result.escalation).toMatchObject({ task_id: 'a', attempts: 1, blocked: ['c'], done_meanwhile: ['b'] });
    expect(result.escalation!.last_error).toContain('a never passes');
    expect(result.stop_reason).toBe('task a failed after 1 attempt(s); blocked: c');
    expect(h.remote.checkpointTasks('goal/indep')).toEqual(['b']);
    expect(result.checkpoints.map((c) => c.task_id)).toEqual(['b']);
    expect(h.forge.escalations).toHaveLength(1);
    expect(h.forge.states()).not.toContain('FINAL_GATE');
    const records = await h.ledger.listTasks(h.key('indep'));
    expect(Object.fromEntries(records.map((t) => [t.taskId, t.status]))).toEqual({ a: 'escalated', b: 'done', c: 'pending' });
    expect((await h.ledger.listAttempts(h.key('indep'))).filter((x) => x.taskId === 'c')).toEqual([]);
    expect((await h.ledger.getGoal(h.key('indep')))?.state).toBe('ESCALATED');

    const stop = memoryGoalHarness();
    const stopped = await stop.run({ goal_id: 'indep', objective: 'independent work', tasks }, { onEscalation: 'stop' });
    expect(stopped).toMatchObject({ status: 'ESCALATED', tasks_completed: 0, iterations: 1, escalation: { task_id: 'a', attempts: 1 } });
    expect(stopped.escalation).not.toHaveProperty('blocked');
    expect(stop.remote.checkpointTasks('goal/indep')).toEqual([]);
    expect(stop.forge.escalations).toHaveLength(1);
  });

  it('does not redo tasks that have a checkpoint when run again', async () => {
    const h = memoryGoalHarness();
    const spec = { goal_id: 'again', objective: 'idempotent', tasks: [task('a', { run: 'write a' }), task('b', { run: 'write b', dependencies: ['a'] })] };
    const first = await h.run(spec);
    const second = await h.run(spec);
    expect(second).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 2, iterations: first.iterations });
    expect(h.remote.checkpointTasks('goal/again')).toEqual(['a', 'b']);
    expect(h.sandbox.calls.filter((c) => c.command === 'write a')).toHaveLength(1);
  });

  it('reports through the outbox: each report once, in order; a report a killed run left is made first, its stale final summary superseded', async () => {
    const h = memoryGoalHarness();
    const spec = { goal_id: 'outbox', objective: 'reports', tasks: [task('a', { run: 'write a' }), task('b', { run: 'write b', dependencies: ['a'] })] };
    const first = await h.run(spec);
    expect(h.forge.checkpoints.map((c) => c.taskId)).toEqual(['a', 'b']);
    expect(h.forge.results).toEqual([first]);
    const key = h.key('outbox');
    expect(await h.ledger.pendingEffects({ key })).toEqual([]);
    // As a run killed after writing its last steps would leave them: a report and a final summary pending.
    const stale = { ...first, duration_s: 999 };
    await h.ledger.recordChange(key, {
      effects: [
        { kind: 'escalate', payload: { escalation: { task_id: 'a', attempts: 1, last_error: 'from the killed run' } } },
        { kind: 'finished', payload: { result: stale } },
      ],
    });
    const second = await h.run(spec);
    expect(h.forge.escalations.map((e) => e.last_error)).toEqual(['from the killed run']);
    expect(h.forge.results).toEqual([first, second]);
    expect(await h.ledger.pendingEffects({ key })).toEqual([]);
  });

  it('an effect that fails stays pending with its error, and does not fail the goal', async () => {
    const h = memoryGoalHarness();
    h.forge.checkpointed = async () => {
      throw new Error('forge answered 502');
    };
    const result = await h.run({ goal_id: 'undelivered', objective: 'x', tasks: [task('a', { run: 'write a' })] });
    expect(result.status).toBe('LOOP_COMPLETE');
    const pending = await h.ledger.pendingEffects({ key: h.key('undelivered') });
    // A goal's effects happen in order: the final report waits behind the failed one.
    expect(pending.map((e) => [e.kind, e.attempts, e.lastError])).toEqual([
      ['checkpointed', 1, 'forge answered 502'],
      ['finished', 0, null],
    ]);
    expect(h.forge.results).toEqual([]);
  });

  it('fails an attempt whose run step fails, without running the verification', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({
      goal_id: 'stepfail',
      objective: 'run step fails',
      tasks: [task('t', { run: ['echo first-ok', 'exit 7 boom: $GOAL_ATTEMPT'], verification: 'write verified', max_retries: 2 })],
    });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation!.last_error).toMatch(/run step `exit 7 boom.*` exited with code 7/);
    expect(result.escalation!.last_error).toContain('boom: 2');
    const attempts = await h.ledger.listAttempts(h.key('stepfail'));
    expect(attempts.map((a) => a.phase)).toEqual(['run', 'run']);
    // Only the baseline ran it (before the first attempt), never after a failed run step.
    expect(h.sandbox.calls.filter((c) => c.command === 'write verified')).toHaveLength(1);
    expect(h.sandbox.calls.findIndex((c) => c.command === 'write verified')).toBeLessThan(h.sandbox.calls.findIndex((c) => c.command.startsWith('exit 7')));
  });

  it('stops at max_iterations with a clear stop reason', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({
      goal_id: 'iter',
      objective: 'iterations',
      tasks: [task('a'), task('b', { verification: 'fail attempt $GOAL_ATTEMPT', max_retries: 10 }), task('c')],
      limits: { max_iterations: 4 },
    });
    expect(result).toMatchObject({ status: 'STOPPED', iterations: 4, tasks_completed: 1 });
    expect(result.stop_reason).toMatch(/max_iterations/);
  });

  it('trips the circuit breaker after error_threshold consecutive infrastructure errors', async () => {
    const h = memoryGoalHarness();
    const agent = new ScriptedAgent(() => ({ ok: false, kind: 'infra', error: 'model API answered 529 overloaded' }));
    const result = await h.run({ goal_id: 'cb', objective: 'breaker', tasks: [task('a', { max_retries: 1 })], limits: { error_threshold: 3 } }, { agent });
    expect(result.status).toBe('STOPPED');
    expect(result.stop_reason).toMatch(/circuit breaker: 3 consecutive infrastructure errors.*529/);
    // Infrastructure errors did not use up the task's single attempt.
    expect(agent.calls).toHaveLength(3);
    expect((await h.ledger.getGoal(h.key('cb')))!.counters.errors).toBe(3);
  });

  it('recovers from a passing infrastructure error without escalating', async () => {
    const h = memoryGoalHarness();
    const agent = new ScriptedAgent(({ attempt }) => (attempt === 1 ? { ok: false, kind: 'infra', error: 'ECONNRESET' } : undefined));
    const result = await h.run({ goal_id: 'flaky', objective: 'flaky infra', tasks: [task('a', { max_retries: 1 })] }, { agent });
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2 });
  });

  it('stops when the cost cap is reached, before starting another attempt', async () => {
    const h = memoryGoalHarness();
    const agent = new ScriptedAgent(() => ({ usage: { input: 1000, output: 100, cache_read: 0, cache_write: 0 }, costUsd: 0.6 }));
    const result = await h.run({ goal_id: 'cost', objective: 'cost', tasks: [task('a', { verification: 'fail attempt $GOAL_ATTEMPT', max_retries: 5 })], limits: { cost_cap_usd: 1 } }, { agent });
    expect(result.status).toBe('STOPPED');
    expect(result.stop_reason).toMatch(/cost_cap_usd/);
    expect(agent.calls).toHaveLength(2);
    expect(result.cost_usd).toBeCloseTo(1.2);
    expect(result.tokens).toEqual({ input: 2000, output: 200, cache_read: 0, cache_write: 0 });
  });

  it('stops at the wall-clock budget between attempts (the run clock)', async () => {
    const h = memoryGoalHarness();
    let now = 1_000_000;
    const agent = new ScriptedAgent(() => {
      now += 40_000;
    });
    const tasks = [task('a'), task('b', { dependencies: ['a'] }), task('c', { dependencies: ['b'] })];
    const result = await h.run({ goal_id: 'wall', objective: 'wall', tasks, limits: { max_wall_minutes: 1 } }, { agent, clock: () => now });
    expect(result).toMatchObject({ status: 'STOPPED', tasks_completed: 2, stop_reason: 'max_wall_minutes reached (1)', duration_s: 80 });
    expect(agent.calls.map((c) => c.task.id)).toEqual(['a', 'b']);
  });

  it('stops a command in progress when the wall clock runs out, rolling back the attempt', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({ goal_id: 'wall-timer', objective: 'wall', tasks: [task('long', { run: 'write partial && hang' })], limits: { max_wall_minutes: 0.002 } });
    expect(result).toMatchObject({ status: 'STOPPED', stop_reason: 'max_wall_minutes reached (0.002)' });
    expect(h.workspace().files.has('partial')).toBe(false);
    // Ended by the run's signal, not the command's own timeout (600 s, past the test's).
    expect(h.sandbox.calls.find((c) => c.command.includes('hang'))?.signal?.aborted).toBe(true);
  });

  it('waits for approval of a risky task, then runs it once approved', async () => {
    const h = memoryGoalHarness();
    const spec = { goal_id: 'risky', objective: 'approval', tasks: [task('safe'), task('danger', { risk: 'critical', dependencies: ['safe'] })] };
    const first = await h.run(spec);
    expect(first.status).toBe('AWAITING_APPROVAL');
    expect(first.stop_reason).toMatch(/danger.*approval/);
    expect(h.forge.approvals).toEqual([['danger']]);
    expect(h.remote.checkpointTasks('goal/risky')).toEqual(['safe']);
    const second = await h.run(spec, { approve: ['danger'] });
    expect(second.status).toBe('LOOP_COMPLETE');
    expect(h.remote.checkpointTasks('goal/risky')).toEqual(['safe', 'danger']);
    expect((await h.ledger.listTasks(h.key('risky'))).find((t) => t.taskId === 'danger')).toMatchObject({ approved: true, status: 'done' });
  });

  it('pauses within moments when a pause is requested through the ledger, rolling back the attempt', async () => {
    const h = memoryGoalHarness();
    h.forge.onUpdate = (s) => {
      if (s.state === 'EXECUTING') void h.ledger.setControl(h.key('pausable'), 'pause');
    };
    const result = await h.run({ goal_id: 'pausable', objective: 'pause', tasks: [task('long', { run: 'write partial && hang' })] });
    expect(result.status).toBe('PAUSED');
    expect(result.stop_reason).toBe('paused by a human');
    expect(h.sandbox.calls.find((c) => c.command.includes('hang'))?.signal?.aborted).toBe(true);
    expect(h.workspace().files.has('partial')).toBe(false);
    expect((await h.ledger.getGoal(h.key('pausable')))!.control).toBe('pause'); // the human's last word, until a newer one
  });

  it('stops within moments when a stop is requested through the ledger', async () => {
    const h = memoryGoalHarness();
    h.forge.onUpdate = (s) => {
      if (s.state === 'EXECUTING') void h.ledger.connect().setControl(h.key('stoppable'), 'stop');
    };
    const result = await h.run({ goal_id: 'stoppable', objective: 'stop', tasks: [task('long', { run: 'hang' })] });
    expect(result).toMatchObject({ status: 'STOPPED', stop_reason: 'stopped by a human' });
  });

  it('stops cleanly when the caller aborts (Ctrl-C)', async () => {
    const h = memoryGoalHarness();
    const abort = new AbortController();
    h.forge.onUpdate = (s) => {
      if (s.state === 'EXECUTING') setTimeout(() => abort.abort(), 100);
    };
    const result = await h.run({ goal_id: 'ctrlc', objective: 'abort', tasks: [task('long', { run: 'hang' })] }, { signal: abort.signal });
    expect(result.status).toBe('STOPPED');
    expect(result.stop_reason).toMatch(/stopped by the user/);
  });

  it('lets go of the goal when abandoned (lease lost): no new state is written, and the next run resumes it', async () => {
    const h = memoryGoalHarness();
    const abandon = new AbortController();
    h.forge.onUpdate = (s) => {
      if (s.state === 'EXECUTING' && s.tasks.find((t) => t.id === 'b')?.status === 'running') setTimeout(() => abandon.abort(), 100);
    };
    const spec = { goal_id: 'handover', objective: 'hand over', tasks: [task('a', { run: 'write a' }), task('b', { run: 'hang && write b', dependencies: ['a'] })] };
    await expect(h.run(spec, { abandon: abandon.signal })).rejects.toBeInstanceOf(GoalAbandonedError);
    const key = h.key('handover');
    expect((await h.ledger.getGoal(key))!.state).not.toMatch(/STOPPED|FAILED|PAUSED/);
    h.forge.onUpdate = undefined;
    const again = await h.run({ ...spec, tasks: [spec.tasks[0]!, task('b', { run: 'write b', dependencies: ['a'] })] });
    expect(again.status).toBe('LOOP_COMPLETE');
    expect(h.remote.checkpointTasks('goal/handover')).toEqual(['a', 'b']);
  });

  it('resumes from the ledger after a crash: attempts are numbered on, counters carry over, git says what is done', async () => {
    const h = memoryGoalHarness();
    const abandon = new AbortController();
    const agent = new ScriptedAgent(({ task: t, attempt }) => {
      if (t.id === 'b' && attempt === 1) abandon.abort(); // the process dies while b's first attempt runs
      return { usage: { input: 10, output: 1, cache_read: 0, cache_write: 0 }, costUsd: 0.01 };
    });
    const spec = { goal_id: 'crash', objective: 'crash', tasks: [task('a', { run: 'write a' }), task('b', { run: 'write b', dependencies: ['a'] })] };
    await expect(h.run(spec, { abandon: abandon.signal, agent })).rejects.toBeInstanceOf(GoalAbandonedError);
    const key = h.key('crash');
    // The ledger says b is running, git has only a's checkpoint.
    expect((await h.ledger.listTasks(key)).map((t) => [t.taskId, t.status, t.attempts])).toEqual([
      ['a', 'done', 1],
      ['b', 'running', 1],
    ]);
    const again = await h.run(spec, { agent });
    expect(again).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 3, tasks_completed: 2 });
    expect(agent.calls.map((c) => `${c.task.id}#${c.attempt}`)).toEqual(['a#1', 'b#1', 'b#2']);
    expect(again.cost_usd).toBeCloseTo(0.03);
    expect(again.tokens.input).toBe(30);
    expect(h.remote.checkpointTasks('goal/crash')).toEqual(['a', 'b']);
    expect(h.remote.log('goal/crash').at(-1)).toMatchObject({ taskId: 'b', attempt: 2 });
  });

  it('writes nothing more once the fence says another worker holds the goal', async () => {
    const h = memoryGoalHarness();
    const spec = { goal_id: 'fenced', objective: 'fenced', tasks: [task('a', { run: 'write a' }), task('b', { run: 'write b', dependencies: ['a'] })] };
    let checks = 0;
    let eventsAtLoss = -1;
    const key = h.key('fenced');
    const fence = async () => {
      checks += 1;
      if (h.remote.checkpointTasks('goal/fenced').length === 0) return true;
      if (eventsAtLoss < 0) eventsAtLoss = (await h.ledger.listEvents(key)).length; // taken over right after task a
      return false;
    };
    await expect(h.run(spec, { fence })).rejects.toBeInstanceOf(GoalAbandonedError);
    expect(checks).toBeGreaterThan(1);
    expect(h.remote.checkpointTasks('goal/fenced')).toEqual(['a']);
    expect((await h.ledger.listEvents(key)).length).toBe(eventsAtLoss); // not one transition after the loss
    expect((await h.ledger.getGoal(key))!.state).not.toMatch(/STOPPED|FAILED|PAUSED|COMPLETE/);
  });

  it('honors a pause recorded before the run when asked to (the App worker), and clears it otherwise (the CLI)', async () => {
    const h = memoryGoalHarness();
    const spec = { goal_id: 'pending', objective: 'pending pause', tasks: [task('a', { run: 'write a' })] };
    const key = h.key('pending');
    await h.ledger.upsertGoal(key, { spec: validateGoalSpec(spec), branch: 'goal/pending' });
    await h.ledger.setControl(key, 'pause');
    const honored = await h.run(spec, { honorPendingControl: true });
    expect(honored.status).toBe('PAUSED');
    expect(h.remote.checkpointTasks('goal/pending')).toEqual([]);
    await h.ledger.setControl(key, 'pause');
    const cleared = await h.run(spec);
    expect(cleared.status).toBe('LOOP_COMPLETE');
  });

  it('escalates on a failing final gate with the failing check named', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({ goal_id: 'gate', objective: 'gate', acceptance_criteria: [{ description: 'lint is clean', check: 'fail 3 lint errors' }], tasks: [task('a')] }, { gate: ['true'] });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation).toMatchObject({ task_id: 'final-gate' });
    expect(result.escalation!.last_error).toMatch(/lint is clean .*exited with code 1:\n3 lint errors/s);
  });

  it('runs the repo gate commands in the final gate', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({ goal_id: 'gate2', objective: 'gate', tasks: [task('a')] }, { gate: ['exists never-created'] });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation!.last_error).toContain('gate: exists never-created');
  });

  it('escalates a failing setup as task "setup" without running any task', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({ goal_id: 'badsetup', objective: 'setup fails', tasks: [task('a', { run: 'write a' })] }, { setup: ['fail npm ERR! missing lockfile'] });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation).toMatchObject({ task_id: 'setup' });
    expect(result.escalation!.last_error).toContain('npm ERR! missing lockfile');
    expect(result.iterations).toBe(0);
    expect(h.sandbox.calls.map((c) => c.command)).toEqual(['fail npm ERR! missing lockfile']);
  });

  it('resumes after an escalation once a human fixed the branch, with fresh retries', async () => {
    const h = memoryGoalHarness();
    const spec = {
      goal_id: 'fixable',
      objective: 'needs a human',
      tasks: [task('first', { run: 'write one' }), task('needs-fix', { verification: 'exists human-fix', dependencies: ['first'], max_retries: 1 })],
    };
    expect((await h.run(spec)).status).toBe('ESCALATED');
    h.remote.push('goal/fixable', 'fix', { 'human-fix': 'done' });
    const second = await h.run(spec);
    expect(second).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 2 });
    expect(h.remote.checkpointTasks('goal/fixable')).toEqual(['first', 'needs-fix']);
  });

  it('refuses a checkpoint that changes a protected path and lets the repair loop try again', async () => {
    const h = memoryGoalHarness();
    const agent = new ScriptedAgent(({ attempt }) => {
      if (attempt === 1) h.workspace().files.set('.github/workflows/ci.yml', 'x');
      h.workspace().files.set('ok', 'ok');
    });
    const result = await h.run({ goal_id: 'wf', objective: 'protected', tasks: [task('ci')] }, { agent });
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2, errors_recovered: 1 });
    const attempts = await h.ledger.listAttempts(h.key('wf'));
    expect(attempts.find((a) => a.phase === 'checkpoint')?.output).toMatch(/protected paths \(\.github\/workflows\/ci\.yml\)/);
  });

  it('runs setup before the tasks and keeps its output across rollbacks, out of every checkpoint', async () => {
    const h = memoryGoalHarness();
    const result = await h.run(
      { goal_id: 'setup', objective: 'setup', tasks: [task('uses-deps', { run: 'write stray', verification: 'exists deps/lib && equals $GOAL_ATTEMPT 2' })] },
      { setup: ['write deps/lib'] },
    );
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2 });
    expect(h.sandbox.calls.map((c) => c.command)[0]).toBe('write deps/lib');
    expect([...h.remote.log('goal/setup')[0]!.files.keys()]).not.toContain('deps/lib');
  });

  it('reports a workspace that cannot be prepared as an internal failure, not a crash', async () => {
    const h = memoryGoalHarness();
    const result = await h.run({ goal_id: 'noremote', objective: 'x', tasks: [task('a')] }, {}, { prepareError: new Error('remote unreachable') });
    expect(result.status).toBe('FAILED');
    expect(result.stop_reason).toMatch(/cannot prepare the workspace: remote unreachable/);
    expect(h.forge.results).toEqual([result]);
  });
});
