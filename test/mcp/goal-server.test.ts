import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointCommits, git } from '../helpers/git.js';
import { connectGoalLoop } from '../helpers/mcp-client.js';
import { mcpProject } from '../helpers/mcp-project.js';

const GOAL = `goal_id: mcp-e2e
objective: Three tasks driven by an external agent
constraints: [Keep src/index.js working]
tasks:
  - id: notes
    title: Add notes
    description: Create notes.txt with any content.
    verification: test -s notes.txt
  - id: version
    title: Write the version
    dependencies: [notes]
    verification: grep -q '^version=2$' version.txt || { echo "version.txt says $(cat version.txt 2>&1)"; exit 1; }
  - id: impossible
    title: Cannot pass
    dependencies: [version]
    verification: echo "expected 42, got 41"; exit 1
    max_retries: 2
`;

describe('goal-loop mcp driven by a real MCP client', () => {
  it('lists its six tools and three resource templates', async () => {
    const p = await mcpProject();
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const tools = (await c.client.listTools()).tools.map((t) => t.name).sort();
    expect(tools).toEqual(['goal_config', 'goal_plan', 'goal_start', 'goal_status', 'next_task', 'task_complete']);
    for (const t of (await c.client.listTools()).tools) {
      expect(t.description!.length).toBeGreaterThan(40);
      expect(t.inputSchema.type).toBe('object');
    }
    const templates = (await c.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate).sort();
    expect(templates).toEqual(['goal://{goal_id}/attempts', 'goal://{goal_id}/ledger', 'goal://{goal_id}/spec']);
    const plan = await c.call('goal_plan', { spec: GOAL });
    expect(plan.isError).toBe(false);
    expect(plan.text).toMatch(/1\. notes {2}Add notes\n2\. version {2}Write the version {2}\(after notes\)\n3\. impossible/);
    expect(plan.text).toContain('```mermaid');
    const bad = await c.call('goal_plan', { spec: 'objective: x\ntasks:\n  - id: a\n    title: A\n    verification: "true"\n    dependencies: [zz]\n' });
    expect(bad.isError).toBe(true);
    expect(bad.text).toContain('tasks[0].dependencies: unknown task "zz"');
  });

  it('works a whole goal: a task passes, one is repaired after a failed verification, one escalates', async () => {
    const p = await mcpProject();
    const c = await connectGoalLoop({ env: p.env, args: p.args });

    const started = await c.ok('goal_start', { spec: GOAL });
    expect(started).toMatchObject({ goal_id: 'mcp-e2e', branch: 'goal/mcp-e2e' });
    const ws: string = started.workspace;
    expect(started.next).toMatchObject({ action: 'BUILD', task: { id: 'notes', verification: 'test -s notes.txt' }, attempt: 1, workspace: ws, branch: 'goal/mcp-e2e' });
    expect(started.next.constraints).toEqual(['Keep src/index.js working']);
    expect(git(ws, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('goal/mcp-e2e');

    // The driver cannot report a task other than the current one, and nothing is done without a pass.
    const wrong = await c.call('task_complete', { task_id: 'version' });
    expect(wrong.isError).toBe(true);
    expect(wrong.text).toMatch(/not the current task; the current task is "notes"/);

    // Task 1: the agent edits the workspace; the loop verifies and checkpoints.
    await writeFile(join(ws, 'notes.txt'), 'some notes\n');
    const one = await c.ok('task_complete', { task_id: 'notes', summary: 'wrote notes.txt', cost_usd: 0.01 });
    expect(one.completed).toMatchObject({ task_id: 'notes', attempt: 1, decision: 'CHECKPOINTED', verification: { passed: true, exit_code: 0 } });
    expect(one.completed.checkpoint).toMatch(/^[0-9a-f]{40}$/);
    expect(one.next).toMatchObject({ action: 'BUILD', task: { id: 'version' }, attempt: 1, done: [{ task_id: 'notes', sha: one.completed.checkpoint }] });
    expect(one.next.previous_failure).toBeUndefined();

    // Task 2: a wrong first attempt fails verification; the workspace is rolled back; the repair passes.
    await writeFile(join(ws, 'version.txt'), 'version=1\n');
    const bad = await c.ok('task_complete', { task_id: 'version' });
    expect(bad.completed).toMatchObject({ task_id: 'version', attempt: 1, decision: 'REPAIR', verification: { passed: false, exit_code: 1 } });
    expect(bad.completed.verification.output).toContain('version.txt says version=1');
    expect(bad.next).toMatchObject({ action: 'BUILD', task: { id: 'version' }, attempt: 2 });
    expect(bad.next.previous_failure).toContain('version.txt says version=1');
    expect(existsSync(join(ws, 'version.txt'))).toBe(false);
    // next_task repeats the same attempt: it is a read, not a new iteration.
    expect(await c.ok('next_task')).toMatchObject({ action: 'BUILD', task: { id: 'version' }, attempt: 2 });
    await writeFile(join(ws, 'version.txt'), 'version=2\n');
    const fixed = await c.ok('task_complete', { task_id: 'version' });
    expect(fixed.completed).toMatchObject({ decision: 'CHECKPOINTED', attempt: 2 });
    expect(fixed.next).toMatchObject({ action: 'BUILD', task: { id: 'impossible' }, attempt: 1, max_attempts: 2 });

    // Task 3: out of attempts -> escalated; the goal stops with the escalation.
    const first = await c.ok('task_complete', { task_id: 'impossible' });
    expect(first.completed.decision).toBe('REPAIR');
    const last = await c.ok('task_complete', { task_id: 'impossible' });
    expect(last.completed).toMatchObject({ decision: 'ESCALATED', attempt: 2 });
    expect(last.next).toMatchObject({ action: 'STOP', status: 'ESCALATED', safeguard: 'escalated', escalation: { task_id: 'impossible', attempts: 2 }, tasks_completed: 2, tasks_total: 3 });
    expect(last.next.escalation.last_error).toContain('expected 42, got 41');
    expect(await c.ok('next_task')).toMatchObject({ action: 'STOP', safeguard: 'escalated' });

    // Git holds the truth: two checkpoints with trailers, pushed to the repository.
    const commits = checkpointCommits(p.repo.bare, 'goal/mcp-e2e');
    expect(commits.map((x) => [x.task, x.attempt, x.goal])).toEqual([
      ['notes', '1', 'mcp-e2e'],
      ['version', '2', 'mcp-e2e'],
    ]);
    expect(git(p.repo.bare, 'show', 'goal/mcp-e2e:version.txt')).toBe('version=2');

    const status = await c.ok('goal_status');
    expect(status).toMatchObject({ goal_id: 'mcp-e2e', state: 'ESCALATED', running: false, counters: { iterations: 5, cost_usd: 0.01 } });
    expect(status.tasks.map((t: { id: string; status: string }) => `${t.id}:${t.status}`)).toEqual(['notes:done', 'version:done', 'impossible:escalated']);

    // Resources: the ledger item and the spec.
    const ledger = await c.client.readResource({ uri: 'goal://mcp-e2e/ledger' });
    const item = JSON.parse((ledger.contents[0] as { text: string }).text);
    expect(item).toMatchObject({ goalId: 'mcp-e2e', state: 'ESCALATED', branch: 'goal/mcp-e2e' });
    expect(item.attempts.filter((a: { phase: string }) => a.phase === 'verify')).toHaveLength(5);
    // The attempt record: each verification the loop ran for the outside agent, and why each attempt ended.
    const record = JSON.parse(((await c.client.readResource({ uri: 'goal://mcp-e2e/attempts' })).contents[0] as { text: string }).text) as Array<{
      taskId: string;
      attempt: number;
      entry: { kind: string; outcome?: string };
    }>;
    expect(record.filter((e) => e.entry.kind === 'verify')).toHaveLength(5);
    expect(record.filter((e) => e.taskId === 'version' && e.entry.kind === 'end').map((e) => [e.attempt, e.entry.outcome])).toEqual([
      [1, 'failed'],
      [2, 'passed'],
    ]);
    const spec = await c.client.readResource({ uri: 'goal://mcp-e2e/spec' });
    expect((spec.contents[0] as { text: string }).text).toContain('objective: Three tasks driven by an external agent');
    const listed = (await c.client.listResources()).resources.map((r) => r.uri);
    expect(listed).toEqual(expect.arrayContaining(['goal://mcp-e2e/ledger', 'goal://mcp-e2e/attempts', 'goal://mcp-e2e/spec']));
  });

  it('resumes from the checkpoints in a new server process', async () => {
    const p = await mcpProject();
    const first = await connectGoalLoop({ env: p.env, args: p.args });
    const started = await first.ok('goal_start', { spec: GOAL });
    await writeFile(join(started.workspace, 'notes.txt'), 'n\n');
    await first.ok('task_complete', { task_id: 'notes' });
    // The agent was mid-way through the next task when the server went away: that is rolled back.
    await writeFile(join(started.workspace, 'version.txt'), 'half done\n');
    await first.close();

    const second = await connectGoalLoop({ env: p.env, args: p.args });
    const again = await second.ok('goal_start', { spec: GOAL });
    expect(again.next).toMatchObject({ action: 'BUILD', task: { id: 'version' }, done: [{ task_id: 'notes' }] });
    expect(existsSync(join(again.workspace, 'version.txt'))).toBe(false);
    expect(readFileSync(join(again.workspace, 'notes.txt'), 'utf8')).toBe('n\n');
  });

  it('reports progress during a long verification, so a client with a short timeout keeps waiting', async () => {
    const p = await mcpProject();
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    await c.ok('goal_start', { spec: 'goal_id: slow\nobjective: x\ntasks:\n  - { id: t, title: T, verification: "sleep 15" }\n' });
    const ticks: number[] = [];
    const r = await c.client.callTool({ name: 'task_complete', arguments: { task_id: 't' } }, undefined, {
      timeout: 11_000,
      resetTimeoutOnProgress: true,
      onprogress: (n) => ticks.push(n.progress),
    });
    expect(r.isError).toBeFalsy();
    expect(JSON.parse((r.content as Array<{ text: string }>)[0]!.text).completed.decision).toBe('CHECKPOINTED');
    expect(ticks).toEqual([1]);
  });
});
