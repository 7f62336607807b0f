import { describe, expect, it } from 'vitest';
import { effectMarker } from '../../src/github/github-forge.js';
import { effectOnceId, MAX_EFFECT_TRIES } from '../../src/loop/outbox.js';
import { ESCALATION_MARKER, STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { type AppHarness, appHarness, goalBlock } from '../helpers/github-app-harness.js';
import { issueCommentCreated, issuesLabeled } from '../helpers/webhook-payloads.js';
import { waitUntil } from '../helpers/worker-process.js';

/**
 * What the outbox trusts on GitHub: a retry looks for its effect's marker only in this App's own
 * comments, and the marker carries a nonce no one else knows; an effect given up after its last
 * try is shown on the issue.
 */

const N = 33;
const KEY = { repo: 'octo-org/widgets', goalId: String(N) };
const BROKEN = goalBlock(`
objective: Needs a human
tasks:
  - { id: broken, title: Broken, run: "true", verification: "test -f fix.txt", max_retries: 1 }
`);
const ISSUE = { number: N, title: 'Outbox', body: BROKEN, user: 'maya', assignees: ['alice'] };
const ISSUE_COMMENTS = new RegExp(`/issues/${N}/comments$`);

const escalations = (h: AppHarness) => h.fake.commentsOn(N).filter((c) => c.user === h.fake.botLogin && c.body.includes(ESCALATION_MARKER));

/** The goal escalated once; then `/goal retry` escalates it again while posting the comment fails (every try of the client). */
async function escalationPending(h: AppHarness) {
  await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));
  expect(escalations(h)).toHaveLength(1);
  h.fake.failNext(4, 502, { method: 'POST', path: ISSUE_COMMENTS });
  const c = h.fake.addComment(N, '/goal retry', 'alice');
  await h.deliver('issue_comment', issueCommentCreated({ ...h.repoSpec, issue: ISSUE, comment: { id: c.id, body: c.body, user: 'alice' } }));
  expect(h.fake.pendingFaults()).toBe(0);
  // The escalation waits to be tried again, and the run's final report behind it (effects go in order).
  const pending = await h.ledger.pendingEffects({ key: KEY });
  expect(pending.map((e) => [e.kind, e.attempts])).toEqual([
    ['escalate', 1],
    ['finished', 0],
  ]);
  return pending[0]!;
}

describe('attack: markers in comments the App did not write', () => {
  it("another App's bot (github-actions, dependabot) posting an effect's marker does not suppress the escalation", async () => {
    const h = await appHarness({ issues: [ISSUE] });
    const effect = await escalationPending(h);
    // The marker as ids make it guessable, and even the whole marker with its nonce (as if it leaked).
    h.fake.addComment(N, `CI passed.\n\n<!-- goal-loop:effect ${N}.${effect.id} -->`, 'github-actions[bot]');
    h.fake.addComment(N, `Bumps lodash.\n\n${effectMarker(effectOnceId(effect))}`, 'dependabot[bot]');
    // The sweep tries again.
    await waitUntil(async () => (await h.ledger.pendingEffects({ key: KEY })).length === 0, 'the escalation effect done', 20_000);
    expect(escalations(h)).toHaveLength(2);
    expect(escalations(h)[1]!.body.trim().split('\n').at(-1)).toBe(effectMarker(effectOnceId(effect)));
  });

  it("another App's comment that starts with the status marker is not taken for the goal's status comment", async () => {
    const h = await appHarness({ issues: [ISSUE] });
    const planted = h.fake.addComment(N, `${STATUS_MARKER}\n### goal-loop: all done, nothing to see`, 'github-actions[bot]');
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));
    expect(planted.history).toHaveLength(1);
    const status = h.fake.commentsOn(N).filter((c) => c.body.startsWith(STATUS_MARKER) && c.user === h.fake.botLogin);
    expect(status).toHaveLength(1);
    expect(status[0]!.body).toContain('`ESCALATED`');
  });
});

describe('an effect given up after its last try', () => {
  it('is shown on the issue: the status comment says which report could not be delivered', async () => {
    const h = await appHarness({ issues: [ISSUE] });
    const effect = await escalationPending(h);
    // No worker runs while the effect is aged to its last try (each claim counts one try).
    await h.runtime.close(0);
    h.fake.failNext(1_000, 502, { method: 'POST', path: ISSUE_COMMENTS });
    await waitUntil(async () => (await h.ledger.claimEffect(effect.id, 'test', 0)) > 0, 'the effect claimable again', 10_000);
    while ((await h.ledger.claimEffect(effect.id, 'test', 0)) < MAX_EFFECT_TRIES - 1);
    // A new process: its sweep makes the last try, which fails, and gives the effect up.
    await h.restart();
    await waitUntil(async () => (await h.ledger.givenUpEffects({ key: KEY })).length === 1, 'the effect given up', 20_000);
    await waitUntil(async () => (await h.ledger.pendingEffects({ key: KEY })).length === 0, 'the status comment synced', 20_000);
    expect(escalations(h)).toHaveLength(1);
    const status = h.fake.commentsOn(N).find((c) => c.body.startsWith(STATUS_MARKER))!;
    expect(status.body).toMatch(/could not be delivered: the escalation comment/);
    expect(status.body).toContain('goal-loop status');
    // Nothing of the error reaches the issue (it may name hosts or paths): `goal-loop status` has it.
    expect(status.body).not.toMatch(/given up after|server error|HttpError/i);
  });
});
