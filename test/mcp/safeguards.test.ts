import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointCommits } from '../helpers/git.js';
import { connectGoalLoop } from '../helpers/mcp-client.js';
import { mcpProject } from '../helpers/mcp-project.js';

const RISKY = `goal_id: risky
objective: One safe task, then a risky one
tasks:
  - id: safe
    title: Safe
    verification: "true"
  - id: deploy
    title: Deploy to production
    dependencies: [safe]
    risk: critical
    verification: test -f deployed.txt
`;

describe('goal-loop mcp keeps every loop rule with an external driver', () => {
  it('a risky task waits for a human: the driver cannot approve it, the human can', async () => {
    const p = await mcpProject();
    let humanSays = false;
    const c = await connectGoalLoop({ env: p.env, args: p.args, human: () => humanSays });
    const started = await c.ok('goal_start', { spec: RISKY });
    const safe = await c.ok('task_complete', { task_id: started.next.task.id });
    expect(safe.next).toMatchObject({ action: 'STOP', status: 'AWAITING_APPROVAL', safeguard: 'approval', awaiting_approval: ['deploy'] });

    humanSays = false;
    const refused = await c.call('goal_config', { approve: ['deploy'] });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^nothing changed: the human did not confirm \(answered no\)/);
    expect(c.asked.at(-1)).toMatch(/asks to approve deploy "Deploy to production" \(risk critical\)\. Allow\?/);
    expect(await c.ok('next_task')).toMatchObject({ action: 'STOP', safeguard: 'approval' });

    humanSays = true;
    const approved = await c.ok('goal_config', { approve: ['deploy'] });
    expect(approved.changes).toEqual(['approved: deploy', 'resumed from AWAITING_APPROVAL']);
    expect(approved.status).toMatchObject({ action: 'BUILD', task: { id: 'deploy' } });
    await writeFile(join(approved.status.workspace, 'deployed.txt'), 'yes\n');
    const done = await c.ok('task_complete', { task_id: 'deploy' });
    expect(done.next).toMatchObject({ action: 'STOP', status: 'LOOP_COMPLETE', safeguard: 'complete' });
  });

  it('without a way to ask a human, approvals and looser budgets are refused', async () => {
    const p = await mcpProject();
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    await c.ok('goal_start', { spec: RISKY.replace('verification: "true"', 'verification: "true"\n    requires_approval: true') });
    const refused = await c.call('goal_config', { approve: ['safe'] });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/this MCP client cannot ask one \(no elicitation support\).*goal-loop mcp --approve <task-id>/);
    const raise = await c.call('goal_config', { limits: { max_iterations: 500 } });
    expect(raise.isError).toBe(true);
    expect(raise.text).toMatch(/^nothing changed: this needs a human's confirmation/);
    // Lowering needs nobody.
    const lower = await c.ok('goal_config', { limits: { max_iterations: 7 } });
    expect(lower.changes).toEqual(['max_iterations: 50 -> 7 (in force now)']);
    expect(lower.status.budget.max_iterations).toBe(7);
  });

  it('--approve on the server command line is a human approval', async () => {
    const p = await mcpProject();
    const c = await connectGoalLoop({ env: p.env, args: [...p.args, '--approve', 'deploy'] });
    const started = await c.ok('goal_start', { spec: RISKY });
    const next = await c.ok('task_complete', { task_id: started.next.task.id });
    expect(next.next).toMatchObject({ action: 'BUILD', task: { id: 'deploy' } });
  });

  it("max_iterations stops the goal, and a spec cannot loosen the repo config's budgets", async () => {
    const p = await mcpProject('sandbox: process\nmax_iterations: 3\n');
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const started = await c.ok('goal_start', {
      spec: 'goal_id: loops\nobjective: never passes\nlimits: { max_iterations: 100 }\ntasks:\n  - id: t\n    title: T\n    verification: echo "attempt $GOAL_ATTEMPT"; false\n    max_retries: 10\n',
    });
    expect(started.limits.max_iterations).toBe(3);
    await c.ok('task_complete', { task_id: 't' });
    let r = await c.ok('task_complete', { task_id: 't' });
    expect(r.next).toMatchObject({ action: 'BUILD', attempt: 3 });
    r = await c.ok('task_complete', { task_id: 't' });
    expect(r.completed.decision).toBe('STOPPED');
    expect(r.next).toMatchObject({ action: 'STOP', status: 'STOPPED', safeguard: 'max_iterations', reason: 'max_iterations reached (3)' });
    // Resuming a stopped goal needs a human too.
    const resume = await c.call('goal_config', { action: 'resume' });
    expect(resume.isError).toBe(true);
    expect(resume.text).toMatch(/nothing changed: this needs a human's confirmation/);
  });

  it('the cost cap counts what the driver reports, and a lowered budget binds at once', async () => {
    const p = await mcpProject('sandbox: process\ncost_cap_usd: 1\n');
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const spec =
      'goal_id: costly\nobjective: costs\ntasks:\n  - { id: a, title: A, verification: "true" }\n  - { id: b, title: B, verification: "true", dependencies: [a] }\n  - { id: c, title: C, verification: "true", dependencies: [b] }\n';
    await c.ok('goal_start', { spec });
    const a = await c.ok('task_complete', { task_id: 'a', cost_usd: 0.4, tokens: { input: 1000, output: 100 } });
    expect(a.next).toMatchObject({ action: 'BUILD', task: { id: 'b' }, budget: { cost_usd: 0.4, cost_cap_usd: 1 } });
    // The work was paid for: it is still verified and checkpointed; then the cap stops the goal.
    const b = await c.ok('task_complete', { task_id: 'b', cost_usd: 0.7 });
    expect(b.completed.decision).toBe('CHECKPOINTED');
    expect(b.next).toMatchObject({ action: 'STOP', safeguard: 'cost_cap_usd', reason: 'cost_cap_usd reached ($1.10 of $1)' });
    expect(checkpointCommits(p.repo.bare, 'goal/costly').map((x) => x.task)).toEqual(['a', 'b']);
    const status = await c.ok('goal_status');
    expect(status.counters).toMatchObject({ cost_usd: 1.1, tokens: { input: 1000, output: 100 } });
  });

  it('lowering max_iterations while the driver holds a task stops the goal there, rolled back', async () => {
    const p = await mcpProject();
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const started = await c.ok('goal_start', { spec: 'goal_id: lower\nobjective: x\ntasks:\n  - { id: t, title: T, verification: "false" }\n' });
    await c.ok('task_complete', { task_id: 't' });
    await writeFile(join(started.workspace, 'half.txt'), 'x');
    const lowered = await c.ok('goal_config', { limits: { max_iterations: 1 } });
    expect(lowered.status).toMatchObject({ action: 'STOP', safeguard: 'max_iterations', reason: 'max_iterations reached (1)' });
    expect(existsSync(join(started.workspace, 'half.txt'))).toBe(false);
  });

  it('the circuit breaker trips on consecutive infrastructure errors the driver reports', async () => {
    const p = await mcpProject('sandbox: process\nerror_threshold: 2\n');
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    await c.ok('goal_start', { spec: 'goal_id: breaker\nobjective: x\ntasks:\n  - { id: t, title: T, verification: "true" }\n' });
    const one = await c.ok('task_complete', { task_id: 't', infra_error: 'my model API is down' });
    expect(one.completed).toMatchObject({ decision: 'RETRY', verification: 'not run' });
    const two = await c.ok('task_complete', { task_id: 't', infra_error: 'still down' });
    expect(two.next).toMatchObject({ action: 'STOP', safeguard: 'circuit_breaker' });
    expect(two.next.reason).toMatch(/^circuit breaker: 2 consecutive infrastructure errors \(last: the external agent reported: still down\)/);
  });

  it('pause rolls back the attempt in progress; resume hands the task out again', async () => {
    const p = await mcpProject();
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const started = await c.ok('goal_start', { spec: 'goal_id: pausing\nobjective: x\ntasks:\n  - { id: t, title: T, verification: "test -f t.txt" }\n' });
    await writeFile(join(started.workspace, 'scratch.txt'), 'x');
    const paused = await c.ok('goal_config', { action: 'pause' });
    expect(paused.changes).toEqual(['paused: the attempt in progress was rolled back']);
    expect(paused.status).toMatchObject({ action: 'STOP', status: 'PAUSED', safeguard: 'paused' });
    expect(existsSync(join(started.workspace, 'scratch.txt'))).toBe(false);
    const late = await c.call('task_complete', { task_id: 't' });
    expect(late.isError).toBe(true);
    expect(late.text).toMatch(/no task is waiting for work: the goal is not running/);
    const resumed = await c.ok('goal_config', { action: 'resume' });
    expect(resumed.status).toMatchObject({ action: 'BUILD', task: { id: 't' }, attempt: 2 });
  });
});
