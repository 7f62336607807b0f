import { writeFile } from 'node:fs/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cliProject } from '../helpers/cli-project.js';
import { FakeAnthropic, type MessagesBody, reply, toolUse } from '../helpers/fake-anthropic.js';
import { checkpointCommits } from '../helpers/git.js';

/**
 * The Claude agent against the fake Messages API: each task's first request writes `<task>.txt`
 * and is billed 300,000 input tokens (about $0.60 at the default model's price), so a goal with a
 * $0.50 cap is stopped in its first task (whose attempt is rolled back).
 */
function expensiveAgent(body: MessagesBody) {
  const last = body.messages.at(-1)!;
  if (Array.isArray(last.content) && last.content.some((b) => b.type === 'tool_result')) return reply([{ type: 'text', text: 'Done.' }], { input_tokens: 100, output_tokens: 10 });
  const task = /# Current task: (\S+)/.exec(JSON.stringify(body.messages[0]!.content))?.[1] ?? 'unknown';
  return reply([toolUse('write_file', { path: `${task}.txt`, content: `${task}\n` })], { input_tokens: 300_000, output_tokens: 100 });
}

describe('goal-loop run --budget', () => {
  it('goes on with a goal its cost cap stopped: the cap is raised, recorded in the ledger, and the goal completes', async () => {
    const p = await cliProject(`goal_id: cli-budget
objective: two files by the agent
limits: { cost_cap_usd: 0.5 }
tasks:
  - id: one
    title: Write one.txt
    verification: test -f one.txt
  - id: two
    title: Write two.txt
    dependencies: [one]
    verification: test -f two.txt
`);
    const fake = await FakeAnthropic.start();
    onTestFinished(() => fake.close());
    fake.otherwise(expensiveAgent);
    const env = { ...p.env, ...fake.env() } as Record<string, string>;
    const args = ['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'claude'];

    const stopped = await runCli(args, env);
    expect(stopped.stderr).not.toMatch(/internal error/);
    expect(stopped.code).toBe(3);
    expect(stopped.stderr).toMatch(/^STOPPED 0\/2 tasks.*cost_cap_usd reached/m);
    // It says how to go on.
    expect(stopped.stderr).toMatch(/^continue: run the same command with --budget <usd> above \$0\.\d\d, e\.g\. --budget \d+$/m);

    // A rerun alone stops again: the cap is still reached.
    const again = await runCli([...args, '--json'], env);
    expect(again.code).toBe(3);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'STOPPED', tasks_completed: 0, stop_reason: expect.stringMatching(/^cost_cap_usd reached/) });

    const resumed = await runCli([...args, '--json', '--budget', '5'], env);
    expect(resumed.stderr).not.toMatch(/internal error/);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 2, tasks_total: 2 });
    expect(checkpointCommits(p.repo.bare, 'goal/cli-budget').map((c) => c.subject)).toEqual(['one: Write one.txt', 'two: Write two.txt']);

    // Recorded with the goal, as `/goal budget` is: `status` shows the cap in force.
    const status = await runCli(['status', '--json'], env);
    expect(JSON.parse(status.stdout)).toEqual([expect.objectContaining({ goal_id: 'cli-budget', state: 'LOOP_COMPLETE', cost_cap_usd: 5 })]);
  });

  it('refuses an amount that is not a number of dollars, before touching the goal', async () => {
    const p = await cliProject(`goal_id: cli-budget-bad
objective: x
tasks:
  - id: one
    title: One
    run: echo 1 > one.txt
    verification: test -f one.txt
`);
    for (const bad of ['--budget=-1', '--budget=ten', '--budget=']) {
      const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', bad], p.env);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/--budget needs an amount in US dollars/);
    }
  });

  it('says how to go on with a goal its iteration cap stopped, and a raised cap in the spec lets it go on', async () => {
    const spec = (max: number) => `goal_id: cli-iterations
objective: passes on its second attempt
limits: { max_iterations: ${max} }
tasks:
  - id: second
    title: Second time lucky
    run: '[ "$GOAL_ATTEMPT" = 1 ] || echo ok > ok.txt'
    verification: test -f ok.txt
`;
    const p = await cliProject(spec(1));
    const args = ['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'];
    const stopped = await runCli(args, p.env);
    expect(stopped.code).toBe(3);
    expect(stopped.stderr).toMatch(/^STOPPED 0\/1 tasks.*max_iterations reached/m);
    expect(stopped.stderr).toMatch(/^continue: raise max_iterations \(in the goal's limits, or the repo config's when the goal sets none\), then run the same command again$/m);
    await writeFile(p.goal, spec(3));
    const resumed = await runCli([...args, '--json'], p.env);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2 });
  });
});
