import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { snapshotFromLedger } from '../../src/github/work-goal.js';
import { DEFAULT_LIMITS, effectiveLimits, loosenedKeys } from '../../src/goal/limits.js';
import { SqliteLedger } from '../../src/ledger/sqlite/sqlite-ledger.js';
import { runCli } from '../helpers/cli.js';
import { checkpointCommits } from '../helpers/git.js';
import { appHarness, goalBlock } from '../helpers/github-app-harness.js';
import { tempDir } from '../helpers/temp.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';

// Issue 11: a spec (written by anyone who can open an issue, or by a model) may only tighten
// the owner's repo config; loosening takes the config or a human's command.

async function project(configYaml: string, goalYaml: string) {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const goal = join(root, 'goal.yml');
  const config = join(root, 'goal-loop.yml');
  await writeFile(goal, goalYaml);
  await writeFile(config, configYaml);
  const env = { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'workspaces') };
  return { root, repo, goal, config, env };
}

describe('goal-loop run: spec limits only tighten the repo config', () => {
  it("kills a command at the config's task_timeout_s although the spec asks for more", async () => {
    const p = await project(
      'task_timeout_s: 1\n',
      `goal_id: loosen-timeout
objective: a slow task
limits: { task_timeout_s: 600 }
tasks:
  - id: slow
    title: Slow
    run: ["sleep 5"]
    verification: "true"
    max_retries: 1
`,
    );
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json', '--config', p.config], p.env);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(2);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ status: 'ESCALATED', escalation: { task_id: 'slow', attempts: 1 } });
    expect(result.escalation.last_error).toMatch(/timed out after 1s/);
    // The log names what was ignored; nothing else is printed for it.
    expect(r.stderr).toMatch(/task_timeout_s/);
  });

  it('holds a high-risk task for approval when the config says max_risk: low and the spec says critical', async () => {
    const p = await project(
      'max_risk: low\n',
      `goal_id: loosen-risk
objective: a risky task
limits: { max_risk: critical }
tasks:
  - id: risky
    title: Risky
    risk: high
    run: ["echo done > done.txt"]
    verification: test -f done.txt
`,
    );
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json', '--config', p.config], p.env);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).status).toBe('AWAITING_APPROVAL');
    expect(r.stderr).toMatch(/--approve risky/);
  });

  it('lets the spec tighten: its lower timeout kills a command the config would allow', async () => {
    const p = await project(
      'task_timeout_s: 600\n',
      `goal_id: tighten-timeout
objective: a slow task
limits: { task_timeout_s: 1 }
tasks:
  - id: slow
    title: Slow
    run: ["sleep 5"]
    verification: "true"
    max_retries: 1
`,
    );
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json', '--config', p.config], p.env);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).escalation.last_error).toMatch(/timed out after 1s/);
  });
});

describe("GitHub App: an issue's spec only tightens the repo config", () => {
  it("holds a high-risk task for approval when the issue asks for max_risk: critical over the config's low", async () => {
    const body = goalBlock(`
objective: Risky change
limits: { max_risk: critical }
tasks:
  - id: risky
    title: Add risky.txt
    risk: high
    run: echo 1 > risky.txt
    verification: test -f risky.txt
`);
    const issue = { number: 9, title: 'Risky', body, user: 'alice' };
    const h = await appHarness({ issues: [issue], files: { '.github/goal-loop.yml': 'max_risk: low\n' } });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));
    expect(h.fake.labels(9)).toContain('goal:awaiting-approval');
    expect(checkpointCommits(h.repo.bare, 'goal/9-risky')).toEqual([]);
    expect((await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '9' }))?.stopReason).toMatch(/risky \(risk: high\) needs approval/);
  });
});

describe('effectiveLimits (the one rule of the CLI, the App and MCP)', () => {
  it("applies a spec only where it is stricter, and a human's change as given", () => {
    const config = { task_timeout_s: 2, max_risk: 'low' as const, cost_cap_usd: 3 };
    const spec = { task_timeout_s: 600, max_risk: 'critical' as const, cost_cap_usd: 1, max_iterations: 500 };
    expect(effectiveLimits(config, spec)).toEqual({ ...DEFAULT_LIMITS, task_timeout_s: 2, max_risk: 'low', cost_cap_usd: 1 });
    expect(loosenedKeys(effectiveLimits(config, undefined), spec)).toEqual(['max_iterations', 'task_timeout_s', 'max_risk']);
    // A human's `/goal budget` (or an elicited goal_config) may raise what the spec may not.
    expect(effectiveLimits(config, spec, { cost_cap_usd: 50 }).cost_cap_usd).toBe(50);
  });

  it('is what the GitHub App shows and runs under', async () => {
    const ledger = new SqliteLedger(':memory:');
    const key = { repo: 'o/r', goalId: '7' };
    await ledger.upsertGoal(key, {
      spec: { goal_id: '7', objective: 'x', constraints: [], acceptance_criteria: [], tasks: [], limits: { task_timeout_s: 900, max_risk: 'critical', max_retries: 1 } },
      branch: 'goal/7',
    });
    const g = { installationId: 1, owner: 'o', repo: 'r', issueNumber: 7, branch: 'goal/7' } as unknown as Parameters<typeof snapshotFromLedger>[2];
    const snap = await snapshotFromLedger(ledger, key, g, { task_timeout_s: 60, max_risk: 'medium' });
    expect(snap.limits).toMatchObject({ task_timeout_s: 60, max_risk: 'medium', max_retries: 1 });
    await ledger.setMeta(key, { budgetUsd: 25 });
    expect((await snapshotFromLedger(ledger, key, g, { cost_cap_usd: 2 })).limits.cost_cap_usd).toBe(25);
    await ledger.close();
  });
});
