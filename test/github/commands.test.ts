import { describe, expect, it } from 'vitest';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { isGoalLeased } from '../../src/worker/lease.js';
import { checkpointCommits } from '../helpers/git.js';
import { type AppHarness, appHarness, goalBlock } from '../helpers/github-app-harness.js';
import { issueCommentCreated, issueCommentDeleted, issueCommentEdited, issuesClosed, issuesLabeled, issuesUnlabeled } from '../helpers/webhook-payloads.js';

const SLOW = goalBlock(`
objective: Slow work
tasks:
  - id: slow
    title: Take a while
    run: sleep 20
    verification: "true"
`);
const QUICK = goalBlock(`
objective: Quick work
tasks:
  - { id: q1, title: One, run: "echo 1 > q1", verification: "test -f q1" }
  - { id: q2, title: Two, run: "echo 2 > q2", verification: "test -f q2", dependencies: [q1] }
`);

async function say(h: AppHarness, n: number, body: string, user = 'alice', issue?: object): Promise<number> {
  const c = h.fake.addComment(n, body, user);
  const i = { number: n, title: h.fake.issue(n).title, body: h.fake.issue(n).body, user: 'alice', ...issue };
  await h.deliver('issue_comment', issueCommentCreated({ ...h.repoSpec, sender: user, issue: i, comment: { id: c.id, body, user } }));
  return c.id;
}

const reactionsOn = (h: AppHarness, id: number) => h.fake.reactions.filter((r) => r.subjectId === id).map((r) => r.content);

describe('GitHub App: /goal commands and who may use them', () => {
  it('refuses /goal start from a user without write access, and nothing runs', async () => {
    const h = await appHarness({ issues: [{ number: 1, title: 'Quick', body: QUICK, user: 'rob' }] });
    await say(h, 1, '/goal start', 'rob');
    await say(h, 1, '/goal start', 'tri');
    const bodies = h.fake.commentsOn(1).map((c) => c.body);
    expect(bodies.filter((b) => /only people with write access/.test(b))).toHaveLength(2);
    expect(bodies.some((b) => b.includes(STATUS_MARKER))).toBe(false);
    expect(checkpointCommits(h.repo.bare, 'goal/1-quick')).toEqual([]);
    expect(await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '1' })).toBeUndefined();
    // Asked of GitHub's collaborator-permission API, for the sender.
    expect(h.fake.calls('GET', /collaborators\/rob\/permission/)).toHaveLength(1);
    expect(h.fake.violations).toEqual([]);
  });

  it('refuses a label added by a user without write access', async () => {
    const h = await appHarness({ issues: [{ number: 2, title: 'Quick', body: QUICK, user: 'rob' }] });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, sender: 'rob', issue: { number: 2, title: 'Quick', body: QUICK, user: 'rob' }, label: 'goal' }));
    expect(h.fake.commentsOn(2).map((c) => c.body)).toEqual([expect.stringMatching(/@rob only people with write access/)]);
    expect(checkpointCommits(h.repo.bare, 'goal/2-quick')).toEqual([]);
  });

  it('ignores bots, edited and deleted comments, and quoted commands', async () => {
    const h = await appHarness({ issues: [{ number: 3, title: 'Quick', body: QUICK, user: 'alice' }] });
    const issue = { number: 3, title: 'Quick', body: QUICK, user: 'alice' };
    await h.deliver('issue_comment', issueCommentCreated({ ...h.repoSpec, sender: { login: 'other-app[bot]', type: 'Bot' }, issue, comment: { body: '/goal start', user: 'other-app[bot]' } }));
    await h.deliver('issue_comment', issueCommentEdited({ ...h.repoSpec, issue, comment: { body: '/goal start' } }));
    await h.deliver('issue_comment', issueCommentDeleted({ ...h.repoSpec, issue, comment: { body: '/goal start' } }));
    await say(h, 3, '> /goal start\n\nquoting someone');
    await say(h, 3, 'like this:\n```\n/goal start\n```');
    expect(h.fake.requests.filter((r) => r.method !== 'POST' || !/access_tokens/.test(r.path))).toEqual([]);
  });

  it('starts with /goal start, reacts eyes then +1, and answers unknown commands with help', async () => {
    const h = await appHarness({ issues: [{ number: 4, title: 'Quick', body: QUICK, user: 'alice' }] });
    const start = await say(h, 4, '/goal start');
    expect(reactionsOn(h, start)).toEqual(['eyes', '+1']);
    expect(checkpointCommits(h.repo.bare, 'goal/4-quick').map((c) => c.task)).toEqual(['q1', 'q2']);
    const bogus = await say(h, 4, '/goal frobnicate');
    expect(reactionsOn(h, bogus)).toEqual(['eyes', 'confused']);
    expect(h.fake.commentsOn(4).at(-1)!.body).toMatch(/unknown command `\/goal frobnicate`[\s\S]*\/goal approve \[task\]/);
    const help = await say(h, 4, '/goal help');
    expect(reactionsOn(h, help)).toEqual(['eyes', '+1']);
    expect(h.fake.commentsOn(4).at(-1)!.body).toContain('`/goal budget <usd>`');
    expect(h.fake.violations).toEqual([]);
  });

  it('pauses a running goal within seconds, resumes it, and stops it', async () => {
    const h = await appHarness({ issues: [{ number: 5, title: 'Slow', body: SLOW, user: 'alice' }] });
    const issue = { number: 5, title: 'Slow', body: SLOW, user: 'alice' };
    await h.probot.receive({ id: 'label-5', name: 'issues', payload: issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }) } as never);
    await waitFor(() => h.fake.labels(5).includes('goal:running'));
    const c = h.fake.addComment(5, '/goal pause', 'maya');
    await h.probot.receive({
      id: 'pause-5',
      name: 'issue_comment',
      payload: issueCommentCreated({ ...h.repoSpec, sender: 'maya', issue, comment: { id: c.id, body: '/goal pause', user: 'maya' } }),
    } as never);
    await h.runtime.idle();
    expect((await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '5' }))!.state).toBe('PAUSED');
    // Interrupted: the 20 s task did not run to its end first.
    expect((await h.ledger.listTasks({ repo: 'octo-org/widgets', goalId: '5' })).find((t) => t.taskId === 'slow')?.status).not.toBe('done');
    expect(h.fake.labels(5)).toContain('goal:paused');

    const r = h.fake.addComment(5, '/goal resume', 'maya');
    await h.probot.receive({
      id: 'resume-5',
      name: 'issue_comment',
      payload: issueCommentCreated({ ...h.repoSpec, sender: 'maya', issue, comment: { id: r.id, body: '/goal resume', user: 'maya' } }),
    } as never);
    await waitFor(() => h.fake.labels(5).includes('goal:running'));
    expect(await isGoalLeased(h.ledger, { repo: 'octo-org/widgets', goalId: '5' })).toBe(true);
    await say(h, 5, '/goal stop', 'maya');
    expect((await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '5' }))!.state).toBe('STOPPED');
    expect(h.fake.labels(5)).toContain('goal:stopped');
    expect(h.fake.labels(5)).not.toContain('goal:paused');
  });

  it("a plan edited while its loop runs never changes the tasks under that loop; accepted again once it rests, the edited plan is the goal's", async () => {
    const before = goalBlock(`
objective: Edited mid-run
tasks:
  - { id: first, title: First, run: "sleep 2; echo 1 > first.txt", verification: "test -f first.txt" }
  - { id: dropped, title: Dropped later, run: "echo 2 > dropped.txt", verification: "test -f dropped.txt", dependencies: [first] }
`);
    const after = before.replace(
      'id: dropped, title: Dropped later, run: "echo 2 > dropped.txt", verification: "test -f dropped.txt"',
      'id: added, title: Added, run: "echo 3 > added.txt", verification: "test -f added.txt"',
    );
    const issue = { number: 12, title: 'Edited', body: before, user: 'alice' };
    const h = await appHarness({ issues: [issue] });
    await h.probot.receive({ id: 'label-12', name: 'issues', payload: issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }) } as never);
    await waitFor(() => h.fake.labels(12).includes('goal:running'));
    // While task "first" runs, someone drops "dropped" from the issue and says /goal resume.
    h.fake.issue(12).body = after;
    await say(h, 12, '/goal resume', 'alice', { body: after });
    await h.runtime.idle();
    const key = { repo: 'octo-org/widgets', goalId: '12' };
    // The running loop finished its own plan, untouched (a queue may also have run the resume's
    // turn after it, which takes the edited plan: both are right).
    expect((await h.ledger.getGoal(key))!.state).toBe('LOOP_COMPLETE');
    expect(
      checkpointCommits(h.repo.bare, 'goal/12-edited')
        .map((c) => c.task)
        .slice(0, 2),
    ).toEqual(['first', 'dropped']);
    // Accepted again once it rests, the edited plan is the goal's.
    await say(h, 12, '/goal resume', 'alice', { body: after });
    const goal = (await h.ledger.getGoal(key))!;
    expect(goal.state).toBe('LOOP_COMPLETE');
    expect(goal.spec.tasks.map((t) => t.id)).toEqual(['first', 'added']);
    expect(checkpointCommits(h.repo.bare, 'goal/12-edited').map((c) => c.task)).toEqual(['first', 'dropped', 'added']);
  });

  it('records /goal budget and applies it as the cost cap', async () => {
    const h = await appHarness({ issues: [{ number: 6, title: 'Quick', body: QUICK, user: 'alice' }] });
    await say(h, 6, '/goal start');
    const id = await say(h, 6, '/goal budget 2.5');
    expect(reactionsOn(h, id)).toEqual(['eyes', '+1']);
    const status = h.fake.commentsOn(6).find((c) => c.body.includes(STATUS_MARKER))!;
    expect(status.body).toContain('of $2.50');
    const bad = await say(h, 6, '/goal budget lots');
    expect(reactionsOn(h, bad)).toEqual(['eyes', 'confused']);
  });

  it('skips a task with /goal skip and goes on', async () => {
    const body = goalBlock(`
objective: Skip one
tasks:
  - { id: broken, title: Broken, verification: "false", max_retries: 1 }
  - { id: after, title: After, run: "echo a > a", verification: "test -f a", dependencies: [broken] }
`);
    const h = await appHarness({ issues: [{ number: 7, title: 'Skip', body, user: 'alice' }] });
    await say(h, 7, '/goal start');
    expect(h.fake.labels(7)).toContain('goal:escalated');
    await say(h, 7, '/goal skip broken');
    expect(checkpointCommits(h.repo.bare, 'goal/7-skip').map((c) => c.task)).toEqual(['after']);
    expect(h.fake.labels(7)).toContain('goal:review');
    expect(h.fake.commentsOn(7).find((c) => c.body.includes(STATUS_MARKER))!.body).toMatch(/- \[x\] broken Broken — skipped/);
  });

  it('stops the goal when the issue is closed and pauses it when the label is removed', async () => {
    const h = await appHarness({
      issues: [
        { number: 8, title: 'Slow', body: SLOW, user: 'alice' },
        { number: 9, title: 'Slow', body: SLOW, user: 'alice' },
      ],
    });
    const i8 = { number: 8, title: 'Slow', body: SLOW, user: 'alice' };
    const i9 = { number: 9, title: 'Slow', body: SLOW, user: 'alice' };
    await h.probot.receive({ id: 'l8', name: 'issues', payload: issuesLabeled({ ...h.repoSpec, issue: i8, label: 'goal' }) } as never);
    await h.probot.receive({ id: 'l9', name: 'issues', payload: issuesLabeled({ ...h.repoSpec, issue: i9, label: 'goal' }) } as never);
    await waitFor(() => h.fake.labels(8).includes('goal:running') && h.fake.labels(9).includes('goal:running'));
    await h.probot.receive({ id: 'c8', name: 'issues', payload: issuesClosed({ ...h.repoSpec, issue: i8 }) } as never);
    await h.probot.receive({ id: 'u9', name: 'issues', payload: issuesUnlabeled({ ...h.repoSpec, issue: i9, label: 'goal' }) } as never);
    await h.runtime.idle();
    expect((await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '8' }))!.state).toBe('STOPPED');
    expect((await h.ledger.getGoal({ repo: 'octo-org/widgets', goalId: '9' }))!.state).toBe('PAUSED');
  });
});

async function waitFor(cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}
