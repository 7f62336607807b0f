import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { EXIT, exitCodeFor } from '../../src/goal/result.js';
import { GoalAbandonedError } from '../../src/loop/controller.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { ScriptedAgent } from '../helpers/scripted-agent.js';

const task = (id: string, extra: Record<string, unknown> = {}) => ({ id, title: `Task ${id}`, verification: 'true', ...extra });

describe('runGoal with real git, SQLite and processes', () => {
  it('runs every task, one checkpoint commit per task in dependency order, then the final gate', async () => {
    const h = await goalHarness();
    const result = await h.run({
      goal_id: 'three',
      objective: 'three files',
      acceptance_criteria: [{ description: 'all files', check: 'test -f a && test -f b && test -f c' }, 'a plain criterion'],
      tasks: [
        task('t-a', { run: 'echo a > a', verification: 'test -f a' }),
        task('t-c', { run: 'echo c > c', verification: 'test -f c', dependencies: ['t-b'] }),
        task('t-b', { run: 'echo b > b', verification: 'test -f b && test -f a', dependencies: ['t-a'] }),
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
    const commits = checkpointCommits(h.repo.bare, 'goal/three');
    expect(commits.map((c) => c.task)).toEqual(['t-a', 't-b', 't-c']);
    expect(commits.map((c) => c.goal)).toEqual(['three', 'three', 'three']);
    expect(result.checkpoints.map((c) => c.sha)).toEqual(git(h.repo.bare, 'log', '--reverse', '--format=%H', 'main..goal/three').split('\n'));
    expect(h.forge.states()).toContain('FINAL_GATE');
    const events = await h.ledger.listEvents({ repo: h.repo.bare, goalId: 'three' });
    expect(events.at(-1)).toMatchObject({ from: 'FINAL_GATE', to: 'LOOP_COMPLETE' });
    expect(events.map((e) => e.to)).toEqual(expect.arrayContaining(['DECOMPOSING', 'TASK_PENDING', 'EXECUTING', 'EVALUATING', 'STATE_COMMIT']));
    const attempts = await h.ledger.listAttempts({ repo: h.repo.bare, goalId: 'three' });
    expect(attempts.filter((a) => a.phase === 'gate')).toMatchObject([{ taskId: 'final-gate', passed: true }]);
  });

  it('gives run steps and verification GOAL_ID, GOAL_TASK_ID and GOAL_ATTEMPT, and nothing of the host env', async () => {
    process.env.GOAL_LOOP_TEST_SECRET = 'do-not-leak';
    try {
      const h = await goalHarness();
      const result = await h.run({
        goal_id: 'env-goal',
        objective: 'env',
        tasks: [task('t1', { run: 'env > env.txt', verification: 'test "$GOAL_ID/$GOAL_TASK_ID/$GOAL_ATTEMPT" = env-goal/t1/1' })],
      });
      expect(result.status).toBe('LOOP_COMPLETE');
      const env = git(h.repo.bare, 'show', 'goal/env-goal:env.txt');
      expect(env).toContain('GOAL_TASK_ID=t1');
      expect(env).not.toContain('do-not-leak');
      expect(env).not.toMatch(/^ANTHROPIC|^GITHUB_TOKEN/m);
    } finally {
      delete process.env.GOAL_LOOP_TEST_SECRET;
    }
  });

  it('rolls a failed attempt back and feeds its failure to the next attempt, which repairs it', async () => {
    const h = await goalHarness();
    const leftovers: boolean[] = [];
    const agent = new ScriptedAgent(async ({ attempt, workspaceDir }) => {
      leftovers.push(existsSync(join(workspaceDir, 'attempt-1.txt')));
      await writeFile(join(workspaceDir, `attempt-${attempt}.txt`), 'x');
      await writeFile(join(workspaceDir, 'answer.txt'), attempt === 1 ? 'wrong\n' : 'right\n');
    });
    const result = await h.run(
      {
        goal_id: 'repair',
        objective: 'repair',
        tasks: [task('t1', { verification: 'grep -q right answer.txt || { echo "answer is $(cat answer.txt)"; exit 1; }' })],
      },
      { agent },
    );
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2, errors_recovered: 1 });
    expect(agent.calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(leftovers).toEqual([false, false]);
    expect(agent.calls[0]!.previousFailure).toBeUndefined();
    expect(agent.calls[1]!.previousFailure).toMatch(/verification .* exited with code 1/);
    expect(agent.calls[1]!.previousFailure).toContain('answer is wrong');
    const [commit] = checkpointCommits(h.repo.bare, 'goal/repair');
    expect(commit).toMatchObject({ task: 't1', attempt: '2' });
    // Attempt 1's stray file was rolled back: it is not in the checkpoint.
    expect(git(h.repo.bare, 'ls-tree', '--name-only', 'goal/repair').split('\n')).toEqual(expect.arrayContaining(['attempt-2.txt', 'answer.txt']));
    expect(git(h.repo.bare, 'ls-tree', '--name-only', 'goal/repair')).not.toContain('attempt-1.txt');
  });

  it('escalates after max_retries attempts, never runs dependents, and reports the last failure', async () => {
    const h = await goalHarness();
    const result = await h.run({
      goal_id: 'esc',
      objective: 'escalate',
      tasks: [
        task('ok', { run: 'echo ok > ok' }),
        task('broken', { run: 'echo "$GOAL_ATTEMPT" > tries', verification: 'echo "still broken on attempt $GOAL_ATTEMPT"; exit 3', max_retries: 2, dependencies: ['ok'] }),
        task('after', { run: 'echo ran > after', dependencies: ['broken'] }),
        task('independent', { run: 'echo i > i', dependencies: ['ok'] }),
      ],
      limits: { max_retries: 5 },
    });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation).toMatchObject({ task_id: 'broken', attempts: 2 });
    expect(result.escalation!.last_error).toContain('still broken on attempt 2');
    expect(result.stop_reason).toMatch(/broken failed after 2 attempt/);
    expect(h.forge.escalations).toHaveLength(1);
    const attempts = await h.ledger.listAttempts({ repo: h.repo.bare, goalId: 'esc' });
    expect(attempts.filter((a) => a.taskId === 'after')).toEqual([]);
    expect(attempts.filter((a) => a.taskId === 'broken').map((a) => a.attempt)).toEqual([1, 2]);
    // `independent` does not depend on the escalated task: it is worked before the goal rests.
    expect(checkpointCommits(h.repo.bare, 'goal/esc').map((c) => c.task)).toEqual(['ok', 'independent']);
    expect(existsSync(join(h.workspaceDir, 'tries'))).toBe(false);
    const tasks = await h.ledger.listTasks({ repo: h.repo.bare, goalId: 'esc' });
    expect(tasks.find((t) => t.taskId === 'broken')).toMatchObject({ status: 'escalated', attempts: 2 });
    expect(tasks.find((t) => t.taskId === 'after')).toMatchObject({ status: 'pending', attempts: 0 });
  });

  it('resumes after an escalation once a human fixed the branch, with fresh retries', async () => {
    const h = await goalHarness();
    const spec = {
      goal_id: 'fixable',
      objective: 'needs a human',
      tasks: [task('first', { run: 'echo 1 > one' }), task('needs-fix', { verification: 'test -f human-fix', dependencies: ['first'], max_retries: 1 })],
    };
    expect((await h.run(spec)).status).toBe('ESCALATED');
    // A human pushes the fix to the goal branch.
    const human = join(h.root, 'human');
    git(h.root, 'clone', '-q', '--branch', 'goal/fixable', h.repo.bare, human);
    await writeFile(join(human, 'human-fix'), 'done');
    git(human, 'add', '-A');
    git(human, '-c', 'user.name=h', '-c', 'user.email=h@h', 'commit', '-qm', 'fix');
    git(human, 'push', '-q', 'origin', 'goal/fixable');
    const second = await h.run(spec);
    expect(second).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 2 });
    expect(checkpointCommits(h.repo.bare, 'goal/fixable').map((c) => c.task)).toEqual(['first', 'needs-fix']);
  });

  it('does not redo tasks that have a checkpoint when run again', async () => {
    const h = await goalHarness();
    const spec = { goal_id: 'again', objective: 'idempotent', tasks: [task('a', { run: 'echo a >> a' }), task('b', { run: 'echo b >> b', dependencies: ['a'] })] };
    const first = await h.run(spec);
    const second = await h.run(spec);
    expect(second).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 2, iterations: first.iterations });
    expect(checkpointCommits(h.repo.bare, 'goal/again')).toHaveLength(2);
    expect(git(h.repo.bare, 'show', 'goal/again:a')).toBe('a');
  });

  it('reports through the outbox: each report once, in order; a report a killed run left is made first, its stale final summary superseded', async () => {
    const h = await goalHarness();
    const spec = { goal_id: 'outbox', objective: 'reports', tasks: [task('a', { run: 'echo a > a' }), task('b', { run: 'echo b > b', dependencies: ['a'] })] };
    const first = await h.run(spec);
    expect(h.forge.checkpoints.map((c) => c.taskId)).toEqual(['a', 'b']);
    expect(h.forge.results).toEqual([first]);
    const key = { repo: h.repo.bare, goalId: 'outbox' };
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

  it('counts a timeout as a failed attempt and kills the command', async () => {
    const h = await goalHarness();
    const result = await h.run({
      goal_id: 'slow',
      objective: 'timeout',
      tasks: [task('hang', { verification: 'sleep 30', max_retries: 1 })],
      limits: { task_timeout_s: 1 },
    });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation!.last_error).toMatch(/timed out after 1s/);
    expect(result.duration_s).toBeLessThan(20);
  });

  it('fails an attempt whose run step fails, without running the verification', async () => {
    const h = await goalHarness();
    const result = await h.run({
      goal_id: 'stepfail',
      objective: 'run step fails',
      tasks: [task('t', { run: ['echo first-ok', 'echo "boom: $GOAL_ATTEMPT" >&2; exit 7'], verification: 'touch verified', max_retries: 2 })],
    });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation!.last_error).toMatch(/run step `echo "boom.*` exited with code 7/);
    expect(result.escalation!.last_error).toContain('boom: 2');
    const attempts = await h.ledger.listAttempts({ repo: h.repo.bare, goalId: 'stepfail' });
    expect(attempts.map((a) => a.phase)).toEqual(['run', 'run']);
  });

  it('stops at max_iterations with a clear stop reason', async () => {
    const h = await goalHarness();
    const result = await h.run({
      goal_id: 'iter',
      objective: 'iterations',
      tasks: [task('a'), task('b', { verification: 'false', max_retries: 10 }), task('c')],
      limits: { max_iterations: 4 },
    });
    expect(result).toMatchObject({ status: 'STOPPED', iterations: 4, tasks_completed: 1 });
    expect(result.stop_reason).toMatch(/max_iterations/);
  });

  it('trips the circuit breaker after error_threshold consecutive infrastructure errors', async () => {
    const h = await goalHarness();
    const agent = new ScriptedAgent(() => ({ ok: false, kind: 'infra', error: 'model API answered 529 overloaded' }));
    const result = await h.run(
      { goal_id: 'cb', objective: 'breaker', tasks: [task('a', { max_retries: 1 })], limits: { error_threshold: 3 } },
      { agent },
    );
    expect(result.status).toBe('STOPPED');
    expect(result.stop_reason).toMatch(/circuit breaker: 3 consecutive infrastructure errors.*529/);
    // Infrastructure errors did not use up the task's single attempt.
    expect(agent.calls).toHaveLength(3);
    expect((await h.ledger.getGoal({ repo: h.repo.bare, goalId: 'cb' }))!.counters.errors).toBe(3);
  });

  it('recovers from a passing infrastructure error without escalating', async () => {
    const h = await goalHarness();
    const agent = new ScriptedAgent(({ attempt }) => (attempt === 1 ? { ok: false, kind: 'infra', error: 'ECONNRESET' } : undefined));
    const result = await h.run({ goal_id: 'flaky', objective: 'flaky infra', tasks: [task('a', { max_retries: 1 })] }, { agent });
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2 });
  });

  it('stops when the cost cap is reached, before starting another attempt', async () => {
    const h = await goalHarness();
    const agent = new ScriptedAgent(() => ({ usage: { input: 1000, output: 100, cache_read: 0, cache_write: 0 }, costUsd: 0.6 }));
    const result = await h.run(
      { goal_id: 'cost', objective: 'cost', tasks: [task('a', { verification: 'false', max_retries: 5 })], limits: { cost_cap_usd: 1 } },
      { agent },
    );
    expect(result.status).toBe('STOPPED');
    expect(result.stop_reason).toMatch(/cost_cap_usd/);
    expect(agent.calls).toHaveLength(2);
    expect(result.cost_usd).toBeCloseTo(1.2);
    expect(result.tokens).toEqual({ input: 2000, output: 200, cache_read: 0, cache_write: 0 });
  });

  it('waits for approval of a risky task, then runs it once approved', async () => {
    const h = await goalHarness();
    const spec = { goal_id: 'risky', objective: 'approval', tasks: [task('safe'), task('danger', { risk: 'critical', dependencies: ['safe'] })] };
    const first = await h.run(spec);
    expect(first.status).toBe('AWAITING_APPROVAL');
    expect(first.stop_reason).toMatch(/danger.*approval/);
    expect(h.forge.approvals).toEqual([['danger']]);
    expect(checkpointCommits(h.repo.bare, 'goal/risky').map((c) => c.task)).toEqual(['safe']);
    const second = await h.run(spec, { approve: ['danger'] });
    expect(second.status).toBe('LOOP_COMPLETE');
  });

  it('pauses within moments when a pause is requested through the ledger, rolling back the attempt', async () => {
    const h = await goalHarness();
    h.forge.onUpdate = (s) => {
      if (s.state === 'EXECUTING') void h.ledger.setControl({ repo: h.repo.bare, goalId: 'pausable' }, 'pause');
    };
    const result = await h.run({ goal_id: 'pausable', objective: 'pause', tasks: [task('long', { run: 'touch partial; sleep 30' })] });
    expect(result.status).toBe('PAUSED');
    expect(result.duration_s).toBeLessThan(15);
    expect(existsSync(join(h.workspaceDir, 'partial'))).toBe(false);
    expect((await h.ledger.getGoal({ repo: h.repo.bare, goalId: 'pausable' }))!.control).toBe('pause'); // the human's last word, until a newer one
  });

  it('stops cleanly when the caller aborts (Ctrl-C)', async () => {
    const h = await goalHarness();
    const abort = new AbortController();
    h.forge.onUpdate = (s) => {
      if (s.state === 'EXECUTING') setTimeout(() => abort.abort(), 100);
    };
    const result = await h.run({ goal_id: 'ctrlc', objective: 'abort', tasks: [task('long', { run: 'sleep 30' })] }, { signal: abort.signal });
    expect(result.status).toBe('STOPPED');
    expect(result.stop_reason).toMatch(/stopped by the user/);
  });

  it('lets go of the goal when abandoned (lease lost): no new state is written, and the next run resumes it', async () => {
    const h = await goalHarness();
    const abandon = new AbortController();
    h.forge.onUpdate = (s) => {
      if (s.state === 'EXECUTING' && s.tasks.find((t) => t.id === 'b')?.status === 'running') setTimeout(() => abandon.abort(), 100);
    };
    const spec = { goal_id: 'handover', objective: 'hand over', tasks: [task('a', { run: 'echo a > a' }), task('b', { run: 'sleep 30; echo b > b', dependencies: ['a'] })] };
    await expect(h.run(spec, { abandon: abandon.signal })).rejects.toBeInstanceOf(GoalAbandonedError);
    const key = { repo: h.repo.bare, goalId: 'handover' };
    expect((await h.ledger.getGoal(key))!.state).not.toMatch(/STOPPED|FAILED|PAUSED/);
    h.forge.onUpdate = undefined;
    const again = await h.run({ ...spec, tasks: [spec.tasks[0]!, task('b', { run: 'echo b > b', dependencies: ['a'] })] });
    expect(again.status).toBe('LOOP_COMPLETE');
    expect(checkpointCommits(h.repo.bare, 'goal/handover').map((c) => c.task)).toEqual(['a', 'b']);
  });

  it('writes nothing more once the fence says another worker holds the goal', async () => {
    const h = await goalHarness();
    const spec = { goal_id: 'fenced', objective: 'fenced', tasks: [task('a', { run: 'echo a > a' }), task('b', { run: 'echo b > b', dependencies: ['a'] })] };
    let checks = 0;
    let eventsAtLoss = -1;
    const key = { repo: h.repo.bare, goalId: 'fenced' };
    const fence = async () => {
      checks += 1;
      if (checkpointCommits(h.repo.bare, 'goal/fenced').length === 0) return true;
      if (eventsAtLoss < 0) eventsAtLoss = (await h.ledger.listEvents(key)).length; // taken over right after task a
      return false;
    };
    await expect(h.run(spec, { fence })).rejects.toBeInstanceOf(GoalAbandonedError);
    expect(checks).toBeGreaterThan(1);
    expect(checkpointCommits(h.repo.bare, 'goal/fenced').map((c) => c.task)).toEqual(['a']);
    expect((await h.ledger.listEvents(key)).length).toBe(eventsAtLoss); // not one transition after the loss
    expect((await h.ledger.getGoal(key))!.state).not.toMatch(/STOPPED|FAILED|PAUSED|COMPLETE/);
  });

  it('honors a pause recorded before the run when asked to (the App worker), and clears it otherwise (the CLI)', async () => {
    const h = await goalHarness();
    const spec = { goal_id: 'pending', objective: 'pending pause', tasks: [task('a', { run: 'echo a > a' })] };
    const key = { repo: h.repo.bare, goalId: 'pending' };
    await h.ledger.upsertGoal(key, { spec: validateGoalSpec(spec), branch: 'goal/pending' });
    await h.ledger.setControl(key, 'pause');
    const honored = await h.run(spec, { honorPendingControl: true });
    expect(honored.status).toBe('PAUSED');
    expect(checkpointCommits(h.repo.bare, 'goal/pending')).toEqual([]);
    await h.ledger.setControl(key, 'pause');
    const cleared = await h.run(spec);
    expect(cleared.status).toBe('LOOP_COMPLETE');
  });

  it('escalates on a failing final gate with the failing check named', async () => {
    const h = await goalHarness();
    const result = await h.run(
      { goal_id: 'gate', objective: 'gate', acceptance_criteria: [{ description: 'lint is clean', check: 'echo "3 lint errors"; exit 1' }], tasks: [task('a')] },
      { gate: ['true'] },
    );
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation).toMatchObject({ task_id: 'final-gate' });
    expect(result.escalation!.last_error).toMatch(/lint is clean .*exited with code 1:\n3 lint errors/s);
  });

  it('runs the repo gate commands in the final gate', async () => {
    const h = await goalHarness();
    const result = await h.run({ goal_id: 'gate2', objective: 'gate', tasks: [task('a')] }, { gate: ['test -f never-created'] });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation!.last_error).toContain('gate: test -f never-created');
  });

  it('runs setup before the tasks and keeps its ignored output across rollbacks', async () => {
    const h = await goalHarness({ files: { '.gitignore': 'deps/\n', 'README.md': 'x\n' } });
    const result = await h.run(
      {
        goal_id: 'setup',
        objective: 'setup',
        tasks: [task('uses-deps', { run: 'touch stray', verification: 'test -f deps/lib && test "$GOAL_ATTEMPT" = 2' })],
      },
      { setup: ['mkdir -p deps && echo lib > deps/lib'] },
    );
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2 });
    expect(git(h.repo.bare, 'ls-tree', '-r', '--name-only', 'goal/setup')).not.toContain('deps/lib');
  });

  it('escalates a failing setup as task "setup" without running any task', async () => {
    const h = await goalHarness();
    const result = await h.run({ goal_id: 'badsetup', objective: 'setup fails', tasks: [task('a', { run: 'touch a' })] }, { setup: ['echo "npm ERR! missing lockfile"; exit 1'] });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation).toMatchObject({ task_id: 'setup' });
    expect(result.escalation!.last_error).toContain('npm ERR! missing lockfile');
    expect(result.iterations).toBe(0);
  });

  it('refuses a checkpoint that edits .github/workflows and lets the repair loop try again', async () => {
    const h = await goalHarness();
    const result = await h.run({
      goal_id: 'wf',
      objective: 'protected',
      tasks: [task('ci', { run: 'if [ "$GOAL_ATTEMPT" = 1 ]; then mkdir -p .github/workflows && echo x > .github/workflows/ci.yml; fi; echo ok > ok' })],
    });
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2, errors_recovered: 1 });
    const attempts = await h.ledger.listAttempts({ repo: h.repo.bare, goalId: 'wf' });
    expect(attempts.find((a) => a.phase === 'checkpoint')?.output).toMatch(/protected paths \(\.github\/workflows\/ci\.yml\)/);
  });

  it('reports an unreachable remote as an internal failure, not a crash', async () => {
    const h = await goalHarness();
    await mkdir(join(h.root, 'not-a-repo'));
    const { GitWorkspace } = await import('../../src/workspace/git-workspace.js');
    const result = await h.run(
      { goal_id: 'noremote', objective: 'x', tasks: [task('a')] },
      { workspace: new GitWorkspace({ remote: join(h.root, 'not-a-repo'), dir: join(h.root, 'ws2'), goalId: 'noremote', branch: 'goal/noremote' }) },
    );
    expect(result.status).toBe('FAILED');
    expect(result.stop_reason).toMatch(/cannot prepare the workspace/);
  });

  it('an escalated task blocks only its dependents: the independent task is checkpointed, then the goal rests in ESCALATED (on_escalation: stop does not go on)', async () => {
    const tasks = [
      task('a', { run: 'echo "$GOAL_ATTEMPT" > a-tries', verification: 'echo "a never passes"; exit 1', max_retries: 1 }),
      task('b', { run: 'echo b > b', verification: 'test -f b && test ! -f a-tries' }),
      task('c', { run: 'echo c > c', dependencies: ['a'] }),
    ];
    const h = await goalHarness();
    const result = await h.run({ goal_id: 'indep', objective: 'independent work', tasks });
    expect(result).toMatchObject({ status: 'ESCALATED', success: false, tasks_completed: 1, tasks_total: 3, iterations: 2 });
    expect(exitCodeFor(result.status)).toBe(EXIT.escalated);
    expect(result.escalation).toMatchObject({ task_id: 'a', attempts: 1, blocked: ['c'], done_meanwhile: ['b'] });
    expect(result.escalation!.last_error).toContain('a never passes');
    expect(result.stop_reason).toBe('task a failed after 1 attempt(s); blocked: c');
    expect(checkpointCommits(h.repo.bare, 'goal/indep').map((c) => c.task)).toEqual(['b']);
    expect(result.checkpoints.map((c) => c.task_id)).toEqual(['b']);
    expect(h.forge.escalations).toHaveLength(1);
    expect(h.forge.states()).not.toContain('FINAL_GATE');
    const records = await h.ledger.listTasks({ repo: h.repo.bare, goalId: 'indep' });
    expect(Object.fromEntries(records.map((t) => [t.taskId, t.status]))).toEqual({ a: 'escalated', b: 'done', c: 'pending' });
    expect((await h.ledger.listAttempts({ repo: h.repo.bare, goalId: 'indep' })).filter((x) => x.taskId === 'c')).toEqual([]);
    expect((await h.ledger.getGoal({ repo: h.repo.bare, goalId: 'indep' }))?.state).toBe('ESCALATED');

    const stop = await goalHarness();
    const stopped = await stop.run({ goal_id: 'indep', objective: 'independent work', tasks }, { onEscalation: 'stop' });
    expect(stopped).toMatchObject({ status: 'ESCALATED', tasks_completed: 0, iterations: 1, escalation: { task_id: 'a', attempts: 1 } });
    expect(stopped.escalation).not.toHaveProperty('blocked');
    expect(checkpointCommits(stop.repo.bare, 'goal/indep')).toEqual([]);
    expect(stop.forge.escalations).toHaveLength(1);
  });
});
