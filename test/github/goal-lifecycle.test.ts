import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ESCALATION_MARKER, STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { appHarness, goalBlock } from '../helpers/github-app-harness.js';
import { issueCommentCreated, issuesLabeled } from '../helpers/webhook-payloads.js';

const TWO_TASKS = goalBlock(`
objective: Add two files
acceptance_criteria:
  - description: both files exist
    check: test -f one.txt && test -f two.txt
tasks:
  - id: task-01
    title: Add one.txt
    run: echo 1 > one.txt
    verification: test -f one.txt
  - id: task-02
    title: Add two.txt
    dependencies: [task-01]
    run: echo 2 > two.txt
    verification: test -f two.txt
`);

const BRANCH = 'goal/7-add-two-files';

describe('GitHub App: a goal from label to ready pull request', () => {
  it('runs a labelled issue with a goal block to a ready PR with one commit per task', async () => {
    const h = await appHarness({ issues: [{ number: 7, title: 'Add two files', body: TWO_TASKS, user: 'alice', labels: ['goal'] }] });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: { number: 7, title: 'Add two files', body: TWO_TASKS, user: 'alice' }, label: 'goal' }));

    expect(h.fake.violations).toEqual([]);
    expect(h.fake.unhandled).toEqual([]);
    const commits = checkpointCommits(h.repo.bare, BRANCH);
    expect(commits.map((c) => c.subject)).toEqual(['task-01: Add one.txt', 'task-02: Add two.txt']);
    expect(commits.map((c) => c.goal)).toEqual(['7', '7']);

    const status = h.fake.commentsOn(7).filter((c) => c.body.includes(STATUS_MARKER) && !c.deleted);
    expect(status).toHaveLength(1);
    expect(status[0]!.body).toContain('`LOOP_COMPLETE`');
    expect(status[0]!.body).toMatch(/- \[x\] task-01 Add one\.txt \(\[[0-9a-f]{7}\]\(https:\/\/github\.com\/octo-org\/widgets\/commit\/[0-9a-f]{40}\)\)/);
    expect(status[0]!.body).toContain('```mermaid\ngraph TD');
    expect(status[0]!.body).toMatch(/\*\*Budget:\*\* 2\/50 iterations/);

    expect(h.fake.pulls).toHaveLength(1);
    const pr = h.fake.pulls[0]!;
    expect(pr).toMatchObject({ draft: false });
    expect(pr.head).toBe(BRANCH);
    expect(pr.body!.startsWith('Closes #7')).toBe(true);
    expect(pr.body).toContain('- [x] task-02 Add two.txt');
    expect(h.fake.graphql.some((g) => /markPullRequestReadyForReview/.test(g.query))).toBe(true);
    expect(status[0]!.body).toContain(`[#${pr.number}]`);

    expect(h.fake.labels(7)).toEqual(expect.arrayContaining(['goal', 'goal:review']));
    expect(h.fake.labels(7)).not.toContain('goal:running');
    const runs = h.fake.checkRuns.filter((c) => c.name === 'goal-loop');
    expect(runs.at(-1)).toMatchObject({ status: 'completed', conclusion: 'success', headSha: git(h.repo.bare, 'rev-parse', BRANCH) });
    expect((await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '7' }))?.state).toBe('LOOP_COMPLETE');
    // The finished goal's clone is gone; the repository's mirror stays for the next goal.
    expect(existsSync(join(h.root, 'workspaces', 'octo-org-widgets', '7'))).toBe(false);
    expect(readdirSync(join(h.root, 'workspaces', 'mirrors')).filter((n) => n.endsWith('.git'))).toHaveLength(1);
  });

  it('a verification that finds no installed tool (exit 127) with no setup: the escalation says to add setup to the repo config, and which', async () => {
    const body = goalBlock(`
objective: Tests need their dependencies
tasks:
  - { id: test, title: Run the tests, run: "true", verification: "./node_modules/.bin/jest", max_retries: 1 }
`);
    const issue = { number: 19, title: 'No setup', body, user: 'maya' };
    const h = await appHarness({ issues: [issue], repoFiles: { 'package-lock.json': '{}\n' } });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));
    const escalation = h.fake.commentsOn(19).find((c) => c.body.includes(ESCALATION_MARKER));
    expect(escalation?.body).toContain('No `setup` ran');
    expect(escalation?.body).toMatch(/setup:\s*\n\s*- npm ci/);
  });

  it('escalates with a comment, a label and a mention, then continues after a fix and /goal retry', async () => {
    const body = goalBlock(`
objective: Needs a human
tasks:
  - id: config
    title: Write the config
    run: "echo 'port: 80' > config.yml"
    verification: "grep -q 'port: 8080' config.yml || { echo 'config.yml has the wrong port'; exit 1; }"
    max_retries: 2
`);
    const issue = { number: 9, title: 'Needs a human', body, user: 'maya', assignees: ['alice'] };
    const h = await appHarness({ issues: [issue] });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));

    const escalation = h.fake.commentsOn(9).find((c) => c.body.includes(ESCALATION_MARKER));
    expect(escalation).toBeDefined();
    expect(escalation!.body).toContain('@alice');
    expect(escalation!.body).toContain('`config`');
    expect(escalation!.body).toContain('2 attempt(s)');
    expect(escalation!.body).toContain('config.yml has the wrong port');
    expect(escalation!.body).toContain('/goal retry');
    expect(h.fake.labels(9)).toContain('goal:escalated');
    expect(checkpointCommits(h.repo.bare, 'goal/9-needs-a-human')).toEqual([]);

    // A human fixes the run step in the issue, then asks for a retry.
    const fixed = body.replace("port: 80'", "port: 8080'");
    h.fake.issue(9).body = fixed;
    const comment = h.fake.addComment(9, '/goal retry', 'maya');
    await h.deliver('issue_comment', issueCommentCreated({ ...h.repoSpec, sender: 'maya', issue: { ...issue, body: fixed }, comment: { id: comment.id, body: '/goal retry', user: 'maya' } }));

    expect(h.fake.violations).toEqual([]);
    expect(checkpointCommits(h.repo.bare, 'goal/9-needs-a-human').map((c) => c.task)).toEqual(['config']);
    expect(h.fake.labels(9)).toContain('goal:review');
    expect(h.fake.labels(9)).not.toContain('goal:escalated');
    expect(h.fake.reactions.filter((r) => r.subjectId === comment.id).map((r) => r.content)).toEqual(['eyes', '+1']);
  });

  it('after an escalation, works the independent task, then escalates once naming what is blocked and what was done', async () => {
    const body = goalBlock(`
objective: Partly blocked
tasks:
  - id: broken
    title: Never passes
    verification: "echo 'broken is broken'; exit 1"
    max_retries: 1
  - id: free
    title: Add free.txt
    run: echo free > free.txt
    verification: test -f free.txt
  - id: after
    title: Needs broken
    dependencies: [broken]
    run: echo after > after.txt
    verification: test -f after.txt
`);
    const issue = { number: 11, title: 'Partly blocked', body, user: 'maya', assignees: ['alice'] };
    const h = await appHarness({ issues: [issue] });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));

    expect(h.fake.violations).toEqual([]);
    expect(checkpointCommits(h.repo.bare, 'goal/11-partly-blocked').map((c) => c.task)).toEqual(['free']);
    expect(h.fake.labels(11)).toContain('goal:escalated');
    expect((await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '11' }))?.state).toBe('ESCALATED');

    const escalations = h.fake.commentsOn(11).filter((c) => c.body.includes(ESCALATION_MARKER));
    expect(escalations).toHaveLength(1);
    const text = escalations[0]!.body;
    expect(text).toContain('@alice');
    expect(text).toContain('`broken`');
    expect(text).toContain('broken is broken');
    expect(text).toContain('the goal went on with the tasks that do not depend on it');
    expect(text).toContain('Done meanwhile (verified and checkpointed): `free`.');
    expect(text).toContain('Still blocked (not run: they depend on an escalated task): `after`.');
    expect(text).toContain('`/goal skip broken`');

    const status = h.fake.commentsOn(11).find((c) => c.body.includes(STATUS_MARKER) && !c.deleted)!;
    expect(status.body).toContain('`ESCALATED`');
    expect(status.body).toMatch(/- \[ \] broken Never passes — escalated, attempt 1/);
    expect(status.body).toMatch(/- \[x\] free Add free\.txt \(\[[0-9a-f]{7}\]/);
    expect(status.body).toContain('- [ ] after Needs broken — blocked by broken');
    // The check run on the PR says the same.
    const run = h.fake.checkRuns.filter((c) => c.name === 'goal-loop').at(-1)!;
    expect(run).toMatchObject({ status: 'completed', conclusion: 'failure' });
    expect(run.output?.summary).toContain('- ⛔ `after` blocked by `broken`');
    expect(run.output?.summary).toContain('- ❌ `broken` escalated (attempt 1)');
  });

  it('posts a goal-block template when the issue has no plan and no model is configured', async () => {
    const issue = { number: 3, title: 'Make it faster', body: 'Please make the app faster.', user: 'alice' };
    const h = await appHarness({ issues: [issue] });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));
    const comments = h.fake.commentsOn(3).map((c) => c.body);
    expect(comments.some((c) => c.includes('```goal') && c.includes('verification:'))).toBe(true);
    expect(h.fake.pulls).toEqual([]);
    expect(h.fake.labels(3)).toContain('goal:stopped');
  });

  it('waits for /goal approve when the repo requires plan approval', async () => {
    const issue = { number: 4, title: 'Approve me', body: TWO_TASKS, user: 'alice' };
    const h = await appHarness({ issues: [issue], files: { '.github/goal-loop.yml': 'require_plan_approval: true\n' } });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));
    expect(h.fake.labels(4)).toContain('goal:awaiting-approval');
    expect(checkpointCommits(h.repo.bare, 'goal/4-approve-me')).toEqual([]);
    const status = h.fake.commentsOn(4).find((x) => x.body.includes(STATUS_MARKER))!;
    expect(status.body).toContain('- [ ] task-01 Add one.txt');

    const c = h.fake.addComment(4, '/goal approve', 'maya');
    await h.deliver('issue_comment', issueCommentCreated({ ...h.repoSpec, sender: 'maya', issue, comment: { id: c.id, body: '/goal approve', user: 'maya' } }));
    expect(checkpointCommits(h.repo.bare, 'goal/4-approve-me')).toHaveLength(2);
    expect(h.fake.labels(4)).toContain('goal:review');
  });

  it('answers an invalid .github/goal-loop.yml with a comment naming the keys, and runs nothing', async () => {
    const issue = { number: 5, title: 'Bad config', body: TWO_TASKS, user: 'alice' };
    const h = await appHarness({ issues: [issue], files: { '.github/goal-loop.yml': 'max_retries: zero\nsandbox: docker\nfrobnicate: true\n' } });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));
    const reply = h.fake
      .commentsOn(5)
      .map((c) => c.body)
      .join('\n');
    expect(reply).toContain('.github/goal-loop.yml` is invalid');
    expect(reply).toMatch(/max_retries/);
    expect(reply).toMatch(/sandbox/);
    expect(reply).toMatch(/unknown key frobnicate/);
    expect(h.fake.pulls).toEqual([]);
    expect(await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '5' })).toBeUndefined();
  });

  it('ignores labels other than the configured one', async () => {
    const issue = { number: 6, title: 'Other label', body: TWO_TASKS, user: 'alice' };
    const h = await appHarness({ issues: [issue], files: { '.github/goal-loop.yml': 'label: autopilot\n' } });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));
    expect(h.fake.commentsOn(6)).toEqual([]);
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'autopilot' }));
    expect(checkpointCommits(h.repo.bare, 'goal/6-other-label')).toHaveLength(2);
  });
});
