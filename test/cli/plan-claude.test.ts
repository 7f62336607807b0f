import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { runCli } from '../helpers/cli.js';
import { FakeAnthropic, reply, toolUse } from '../helpers/fake-anthropic.js';
import { checkpointCommits } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

describe('goal-loop with Claude (through a local fake of the Messages API)', () => {
  it('plan --issue writes a spec from free text when a key is set, and refuses without one', async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const issue = join(root, 'add-farewell.md');
    await writeFile(issue, 'Please add a farewell(name) function next to greet, with a test.\n');
    const fake = await FakeAnthropic.start();
    onTestFinished(() => fake.close());
    fake.push(
      reply(
        [
          toolUse('submit_goal_spec', {
            objective: 'Add farewell(name)',
            tasks: [
              { id: 'farewell', title: 'Add farewell', verification: 'node --test' },
              { id: 'docs', title: 'Document farewell', dependencies: ['farewell'], verification: 'grep -q farewell README.md' },
            ],
          }),
        ],
        { input_tokens: 3000, output_tokens: 300 },
      ),
    );
    const r = await runCli(['plan', '--repo', repo.bare, '--issue', issue], { ...fake.env() } as Record<string, string>);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('goal: add-farewell');
    expect(r.stdout).toContain('2. docs  Document farewell  (after farewell)');
    expect(r.stderr).toMatch(/Claude wrote this plan for \$0\.\d+/);
    expect(fake.requests).toHaveLength(1);
    // The planner saw the repository: its package scripts and tree.
    expect(JSON.stringify(fake.requests[0]!.body)).toContain('node --test');

    const noKey = await runCli(['plan', '--repo', repo.bare, '--issue', issue], { ANTHROPIC_API_KEY: '' });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/set ANTHROPIC_API_KEY/);
  });

  it('run --agent claude lets Claude do a task that the verification then accepts', async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const goal = join(root, 'goal.yml');
    await writeFile(goal, 'goal_id: claude-run\nobjective: add a file\ntasks:\n  - { id: hello, title: Write hello.txt, verification: "grep -q hello hello.txt" }\n');
    const fake = await FakeAnthropic.start();
    onTestFinished(() => fake.close());
    fake.push(reply([toolUse('write_file', { path: 'hello.txt', content: 'hello\n' })]), reply([{ type: 'text', text: 'Done.' }]));
    const env = { ...fake.env(), GOAL_LOOP_DB: join(root, 'l.db'), GOAL_LOOP_WORKSPACES: join(root, 'ws') } as Record<string, string>;
    const r = await runCli(['run', '--repo', repo.bare, '--goal', goal, '--agent', 'claude', '--json'], env);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result.tokens.input).toBeGreaterThan(0);
    expect(result.cost_usd).toBeGreaterThan(0);
    expect(checkpointCommits(repo.bare, 'goal/claude-run').map((c) => c.task)).toEqual(['hello']);
    expect((await runCli(['run', '--repo', repo.bare, '--goal', goal, '--agent', 'claude'], { ...env, ANTHROPIC_API_KEY: '' })).code).toBe(1);
  });
});
