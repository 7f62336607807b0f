import { describe, expect, it } from 'vitest';
import type { GoalShow } from '../../src/cli/actions/show.js';
import { runCli } from '../helpers/cli.js';
import { cliProject } from '../helpers/cli-project.js';

const GOAL = `goal_id: show-me
objective: two files, the second on its second attempt
tasks:
  - { id: one, title: First file, run: "printf 'a\\\\nb\\\\n' > one.txt", verification: "test -f one.txt" }
  - id: two
    title: Second file
    run: 'if [ "$GOAL_ATTEMPT" -gt 1 ]; then echo 2 > two.txt; fi'
    verification: "test -f two.txt"
    dependencies: [one]
    max_retries: 2
`;

describe('goal-loop show', () => {
  it("prints a goal's branch, its commits with their trailers, and the branch's diffstat", async () => {
    const p = await cliProject(GOAL);
    const run = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(run.code, run.stderr).toBe(0);

    const json = await runCli(['show', 'show-me', '--json'], p.env);
    expect(json.code, json.stderr).toBe(0);
    const s = JSON.parse(json.stdout) as GoalShow;
    expect(s).toMatchObject({ goal_id: 'show-me', repo: p.repo.bare, state: 'LOOP_COMPLETE', pushed: true, base: { branch: 'main' }, commits_total: 2 });
    expect(s.branch).toMatch(/show-me/);
    expect(s.base.merge_base).toMatch(/^[0-9a-f]{40}$/);
    // Newest first, each with the trailers the checkpoint wrote.
    expect(s.commits.map((c) => [c.subject, c.task, c.attempt, c.verified])).toEqual([
      ['two: Second file', 'two', '2', 'red->green'],
      ['one: First file', 'one', '1', 'red->green'],
    ]);
    for (const c of s.commits) expect(c.sha).toMatch(/^[0-9a-f]{40}$/);
    expect(s.diffstat).toEqual({
      files: 2,
      insertions: 3,
      deletions: 0,
      shown: [
        { path: 'one.txt', insertions: 2, deletions: 0 },
        { path: 'two.txt', insertions: 1, deletions: 0 },
      ],
    });

    const text = await runCli(['show', 'show-me', '--repo', p.repo.bare], p.env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`branch ${s.branch} (from main at ${s.base.merge_base!.slice(0, 12)})`);
    expect(text.stdout).toMatch(/commits \(2, newest first\):\n {2}[0-9a-f]{12} two: Second file\n {15}task two · attempt 2 · verified red->green/);
    expect(text.stdout).toContain('diffstat: 2 files changed, +3 -0\n  one.txt  +2 -0\n  two.txt  +1 -0\n');
  });

  it('refuses an unknown goal with one line, exit 1', async () => {
    const p = await cliProject(GOAL);
    const before = await runCli(['show', 'nope'], p.env);
    expect(before.code).toBe(1);
    expect(before.stderr).toContain('the ledger');
    await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    const unknown = await runCli(['show', 'nope'], p.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr.trim()).toBe('goal-loop: no goal "nope" in the ledger (see `goal-loop status`)');
  });
});

describe('goal-loop show, before the first checkpoint', () => {
  it('says the goal has no commits yet', async () => {
    const p = await cliProject(`goal_id: show-none
objective: a task that never passes
tasks:
  - { id: never, title: Never, run: "true", verification: "false", max_retries: 1 }
`);
    const run = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(run.code, run.stderr).toBe(2);
    const json = await runCli(['show', 'show-none', '--json'], p.env);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ goal_id: 'show-none', state: 'ESCALATED', branch: 'goal/show-none', pushed: false, commits: [], commits_total: 0 });
    const text = await runCli(['show', 'show-none'], p.env);
    expect(text.stdout).toContain('branch goal/show-none (from main)\nno commits yet: the branch is not on the repository\n');
  });
});
