import { describe, expect, it } from 'vitest';
import { STATE_LABELS } from '../../src/steering/labels.js';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { appHarness, THREE_STEP_GOAL } from '../helpers/github-app-harness.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';

const THREE = THREE_STEP_GOAL;
const ISSUE = { number: 11, title: 'Three steps', body: THREE, user: 'alice', labels: ['goal', 'bug'] };
const BRANCH = 'goal/11-three-steps';

describe('GitHub App: writes per goal', () => {
  it('takes a 3-task goal from label to ready PR in at most 12 writes, with one status comment and one check run per head', async () => {
    // A repository the App worked in before (its state labels exist); status edits at the production
    // interval or slower, so that the count does not depend on how fast this machine runs the tasks.
    const h = await appHarness({ issues: [ISSUE], labels: [...STATE_LABELS], minUpdateIntervalMs: 60_000 });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));

    expect(checkpointCommits(h.repo.bare, BRANCH)).toHaveLength(3);
    expect(h.fake.pulls[0]).toMatchObject({ draft: false });
    expect(h.fake.commentsOn(11).filter((c) => c.body.includes(STATUS_MARKER))).toHaveLength(1);
    expect(h.fake.labels(11).sort()).toEqual(['bug', 'goal', 'goal:review']);
    expect(h.fake.checkRuns.filter((c) => c.status !== 'completed').map((c) => c.headSha)).toEqual([]);

    const kinds = h.fake.writesByKind();
    const shas = git(h.repo.bare, 'rev-list', BRANCH).split('\n');
    expect(h.fake.writesFor({ issue: 11, pulls: [h.fake.pulls[0]!.number], shas })).toEqual(h.fake.writes());
    expect(h.fake.writesFor({ issue: 12345 })).toEqual([]);
    expect(h.fake.writes().length, JSON.stringify(kinds, null, 2)).toBeLessThanOrEqual(12);
    // Was 27 (POST comment 1, PATCH comment 11, labels 3 POST + 2 DELETE, PR 1 POST + 4 PATCH, check runs 3 POST + 1 PATCH, 1 mutation).
    // The creates, and what is written where the run rests, exactly once each.
    expect(kinds).toMatchObject({
      'POST /repos/{owner}/{repo}/issues/{issue_number}/comments': 1,
      'POST /repos/{owner}/{repo}/pulls': 1,
      'mutation markPullRequestReadyForReview': 1,
      'POST /repos/{owner}/{repo}/check-runs': 1,
    });
    const n = (kind: string) => kinds[kind] ?? 0;
    // The status comment is posted when the goal starts (INITIALIZING on its way to EXECUTING a
    // moment later: one write shows the latter), and edited where the run rests; a goal done within
    // the first write's settle time posts it done, in one write.
    expect(n('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}')).toBeLessThanOrEqual(1);
    // goal:running, then goal:review in one request (or goal:review alone).
    expect(n('POST /repos/{owner}/{repo}/issues/{issue_number}/labels') + n('mutation addLabelsToLabelable+removeLabelsFromLabelable')).toBeLessThanOrEqual(2);
    // The draft PR opened with its body at the first checkpoint, its body written again where the run rests.
    expect(n('PATCH /repos/{owner}/{repo}/pulls/{pull_number}')).toBeLessThanOrEqual(1);
    expect(h.fake.writes().length).toBeLessThanOrEqual(8);
  });
});
