import { describe, expect, it } from 'vitest';
import { readGitHubMeta } from '../../src/steering/goal-meta.js';
import { checkpointCommits } from '../helpers/git.js';
import { type AppHarness, appHarness, goalBlock, TWO_FILE_GOAL } from '../helpers/github-app-harness.js';
import { issueCommentCreated, issuesClosed, issuesLabeled, pullRequestClosed, pullRequestReviewSubmitted } from '../helpers/webhook-payloads.js';

/**
 * A pull request event acts on a goal only when it is the goal's own pull request: the number the
 * goal recorded, with its head in this repository. Anyone can open a pull request from a fork
 * whose branch is named like the goal's (the status comment shows the name).
 */

const N = 31;
const KEY = { repo: 'octo-org/widgets', goalId: String(N) };
const BRANCH = `goal/${N}-trust`;
const ISSUE = { number: N, title: 'Trust', user: 'maya', assignees: ['alice'] };
const TWO = TWO_FILE_GOAL;
const BROKEN = goalBlock(`
objective: Needs a human
tasks:
  - { id: broken, title: Broken, run: "true", verification: "test -f fix.txt", max_retries: 1 }
  - { id: after, title: After, run: "echo ok > after.txt", verification: "test -f after.txt" }
`);

async function started(body: string): Promise<{ h: AppHarness; own: number }> {
  const issue = { ...ISSUE, body };
  const h = await appHarness({ issues: [issue] });
  await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));
  const own = readGitHubMeta((await h.ledger.getGoal(KEY))!.meta).prNumber!;
  expect(own).toBe(h.fake.pulls[0]!.number);
  return { h, own };
}

/** mallory's fork of the repository, with a branch named like the goal's, and its pull request. */
function forkPull(h: AppHarness): number {
  return h.fake.addPull({ title: 'Looks legit', head: BRANCH, headOwner: 'mallory', user: 'mallory' }).number;
}

const meta = async (h: AppHarness) => readGitHubMeta((await h.ledger.getGoal(KEY))!.meta);
const state = async (h: AppHarness) => (await h.ledger.getGoal(KEY))!.state;
const goalLabels = (h: AppHarness) => h.fake.labels(N).filter((l) => l.startsWith('goal:'));

describe('attack: a pull request that is not the goal’s own steers nothing', () => {
  it('a fork PR named like the goal branch, closed unmerged, does not stop the goal', async () => {
    const { h } = await started(BROKEN);
    expect(await state(h)).toBe('ESCALATED');
    const fork = forkPull(h);
    await h.deliver('pull_request', pullRequestClosed({ ...h.repoSpec, sender: 'mallory', pull: { number: fork, head: BRANCH, headOwner: 'mallory', user: 'mallory' }, merged: false }));
    expect(await state(h)).toBe('ESCALATED');
    expect(goalLabels(h)).toEqual(['goal:escalated']);
  });

  it('a fork PR named like the goal branch, merged by a maintainer, does not mark the goal merged', async () => {
    const { h } = await started(BROKEN);
    const fork = forkPull(h);
    h.fake.mergePull(fork);
    await h.deliver('pull_request', pullRequestClosed({ ...h.repoSpec, sender: 'maya', pull: { number: fork, head: BRANCH, headOwner: 'mallory', user: 'mallory' }, merged: true }));
    expect((await meta(h)).merged).toBeUndefined();
    expect(await state(h)).toBe('ESCALATED');
    expect(goalLabels(h)).toEqual(['goal:escalated']);
    // The goal still takes commands: a resume runs it again (and, without a fix, escalates again).
    const c = h.fake.addComment(N, '/goal resume', 'alice');
    await h.deliver('issue_comment', issueCommentCreated({ ...h.repoSpec, issue: { ...ISSUE, body: BROKEN }, comment: { id: c.id, body: c.body, user: 'alice' } }));
    expect(h.fake.reactions.filter((r) => r.subjectId === c.id).map((r) => r.content)).toEqual(['eyes', '+1']);
  });

  it("an in-repo PR from the goal branch that is not the goal's recorded PR changes nothing", async () => {
    const { h, own } = await started(TWO);
    expect(await state(h)).toBe('LOOP_COMPLETE');
    const other = h.fake.addPull({ title: 'Another base', head: BRANCH, base: 'release', user: 'alice' }).number;
    expect(other).not.toBe(own);
    h.fake.mergePull(other);
    await h.deliver('pull_request', pullRequestClosed({ ...h.repoSpec, pull: { number: other, head: BRANCH, base: 'release', user: 'alice' }, merged: true }));
    expect((await meta(h)).merged).toBeUndefined();
    expect(goalLabels(h)).toEqual(['goal:review']);
  });

  it("the goal's own PR, merged, still marks it done", async () => {
    const { h, own } = await started(TWO);
    h.fake.mergePull(own);
    await h.deliver('pull_request', pullRequestClosed({ ...h.repoSpec, pull: { number: own, head: BRANCH }, merged: true }));
    expect((await meta(h)).merged).toBe(true);
    expect(goalLabels(h)).toEqual(['goal:done']);
  });

  it('a maintainer’s review on a fork PR named like the goal branch adds no task and answers nothing', async () => {
    const { h } = await started(TWO);
    const fork = forkPull(h);
    const { review } = h.fake.addReview({ pullNumber: fork, state: 'CHANGES_REQUESTED', body: 'Please also delete the tests.', user: 'maya' });
    await h.deliver(
      'pull_request_review',
      pullRequestReviewSubmitted({
        ...h.repoSpec,
        sender: 'maya',
        pull: { number: fork, head: BRANCH, headOwner: 'mallory', user: 'mallory' },
        review: { id: review.id, state: 'changes_requested', body: review.body ?? '', user: 'maya' },
      }),
    );
    expect((await meta(h)).extraTasks).toBeUndefined();
    expect((await meta(h)).pendingReviews).toBeUndefined();
    expect(checkpointCommits(h.repo.bare, BRANCH).map((c) => c.task)).toEqual(['one', 'two']);
    expect(h.fake.commentsOn(fork)).toEqual([]);
  });

  it("issues.closed asks whether the goal's recorded PR is merged, not a fork's", async () => {
    const { h, own } = await started(TWO);
    const fork = forkPull(h);
    h.fake.mergePull(fork);
    await h.deliver('issues', issuesClosed({ ...h.repoSpec, issue: { ...ISSUE, body: TWO } }));
    expect(h.fake.calls('GET', `/repos/octo-org/widgets/pulls/${own}`).length).toBeGreaterThan(0);
    expect(h.fake.calls('GET', `/repos/octo-org/widgets/pulls/${fork}`)).toEqual([]);
    expect((await meta(h)).merged).toBeUndefined();
    expect(await state(h)).toBe('STOPPED');
  });
});
