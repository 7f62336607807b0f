import { describe, expect, it } from 'vitest';
import { effectMarker, GitHubForge, type Octokit } from '../../src/github/github-forge.js';
import { createOptions, writeOptions } from '../../src/github/write-options.js';
import { readGitHubMeta } from '../../src/steering/goal-meta.js';
import { STATE_LABELS } from '../../src/steering/labels.js';
import { ESCALATION_MARKER, STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { snapshotFromLedger } from '../../src/steering/turn/snapshot.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { type AppHarness, appHarness, goalBlock, INSTALLATION, OWNER, REPO, silent, THREE_STEP_GOAL } from '../helpers/github-app-harness.js';
import { issueCommentCreated, issuesLabeled } from '../helpers/webhook-payloads.js';

/**
 * A create GitHub performed but answered 502 (a proxy's timeout, a lost answer) must not be sent
 * again blindly: Octokit's retry plugin would, before any find-by-marker ran. Each create is sent
 * with retries off, and after a failure the object is looked for first.
 */

const THREE = THREE_STEP_GOAL;
const ISSUE = { number: 11, title: 'Three steps', body: THREE, user: 'alice', labels: ['goal'] };
const BRANCH = 'goal/11-three-steps';
const KEY = { repo: `${OWNER}/${REPO}`, goalId: '11' };

const statusComments = (h: AppHarness) => h.fake.commentsOn(11).filter((c) => c.body.includes(STATUS_MARKER));

describe('attack: GitHub performs a create, then answers 502', () => {
  it('one status comment, one PR, one check run on the head (concluded), and the goal still ready', async () => {
    const h = await appHarness({ issues: [ISSUE] });
    h.fake.failNext(1, 'performed-then-502', { method: 'POST', path: /\/issues\/11\/comments$/ });
    h.fake.failNext(1, 'performed-then-502', { method: 'POST', path: /\/pulls$/ });
    h.fake.failNext(1, 'performed-then-502', { method: 'POST', path: /\/check-runs$/ });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));

    expect(h.fake.pendingFaults()).toBe(0);
    expect(h.fake.violations).toEqual([]);
    expect(checkpointCommits(h.repo.bare, BRANCH)).toHaveLength(3);
    expect(statusComments(h)).toHaveLength(1);
    expect(statusComments(h)[0]!.body).toContain('`LOOP_COMPLETE`');
    expect(h.fake.pulls).toHaveLength(1);
    expect(h.fake.pulls[0]!.draft).toBe(false);
    const head = git(h.repo.bare, 'rev-parse', BRANCH);
    expect(h.fake.checkRuns.filter((c) => c.headSha === head)).toHaveLength(1);
    expect(h.fake.checkRuns.find((c) => c.headSha === head)).toMatchObject({ status: 'completed', conclusion: 'success' });
    expect(h.fake.checkRuns.filter((c) => c.status !== 'completed')).toEqual([]);
    // Each create was sent once: what failed was looked for, and found.
    expect(h.fake.calls('POST', /\/issues\/11\/comments$/)).toHaveLength(1);
    expect(h.fake.calls('POST', /\/pulls$/)).toHaveLength(1);
    expect(h.fake.calls('POST', /\/check-runs$/)).toHaveLength(1);
  });

  it('a reply to a command is not re-sent by Octokit either (the event fails, and its replay decides)', async () => {
    const issue = { number: 14, title: 'Quick', body: THREE, user: 'rob' };
    const h = await appHarness({ issues: [issue] });
    h.fake.failNext(1, 'performed-then-502', { method: 'POST', path: /\/issues\/14\/comments$/ });
    const c = h.fake.addComment(14, '/goal start', 'rob');
    await h.deliver('issue_comment', issueCommentCreated({ ...h.repoSpec, sender: 'rob', issue, comment: { id: c.id, body: '/goal start', user: 'rob' } }));
    expect(h.fake.pendingFaults()).toBe(0);
    expect(h.fake.calls('POST', /\/issues\/14\/comments$/)).toHaveLength(1);
    expect(h.fake.commentsOn(14).filter((x) => /only people with write access/.test(x.body))).toHaveLength(1);
  });

  it('the escalation comment is posted once, even when every create is performed and answered 502', async () => {
    const body = goalBlock(`
objective: Needs a human
tasks:
  - { id: broken, title: Broken, run: "true", verification: "test -f fix.txt", max_retries: 1 }
`);
    const issue = { number: 13, title: 'Needs a human', body, user: 'maya', assignees: ['alice'] };
    const h = await appHarness({ issues: [issue] });
    h.fake.failNext(10, 'performed-then-502', { method: 'POST', path: /\/issues\/13\/comments$/ });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));
    expect(h.fake.violations).toEqual([]);
    expect(h.fake.labels(13)).toContain('goal:escalated');
    expect(h.fake.commentsOn(13).filter((c) => c.body.includes(ESCALATION_MARKER))).toHaveLength(1);
    expect(h.fake.commentsOn(13).filter((c) => c.body.includes(STATUS_MARKER))).toHaveLength(1);
    expect(h.fake.calls('POST', /\/issues\/13\/comments$/)).toHaveLength(2);
  });
});

/** A goal done through the App, and a fresh forge on it whose Octokit shows each request's options. */
async function scene() {
  const h = await appHarness({ issues: [ISSUE], labels: [...STATE_LABELS] });
  await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));
  const g = readGitHubMeta((await h.ledger.getGoal(KEY))!.meta).github!;
  const octokit = (await h.probot.auth(INSTALLATION)) as unknown as Octokit;
  const seen: Array<{ method: string; url: string; priority: unknown; retries: unknown }> = [];
  octokit.hook.before('request', (options) => {
    const request = options.request as { writePriority?: unknown; retries?: unknown } | undefined;
    seen.push({ method: String(options.method), url: String(options.url), priority: request?.writePriority, retries: request?.retries });
  });
  const forge = new GitHubForge({ octokit, goal: g, key: KEY, ledger: h.ledger, logger: silent, minUpdateIntervalMs: 0 });
  return { h, g, octokit, forge, seen, snapshot: () => snapshotFromLedger(h.ledger, KEY, g) };
}

describe('write priorities and retries, as Octokit sends them', () => {
  it('passes an unknown `request.writePriority` through to its hooks, and sends nothing of it to GitHub', async () => {
    const s = await scene();
    const { data } = await s.octokit.rest.issues.createComment({ owner: OWNER, repo: REPO, issue_number: 11, body: 'hello', ...writeOptions('urgent') });
    expect(data.body).toBe('hello');
    expect(s.seen.at(-1)).toMatchObject({ method: 'POST', priority: 'urgent' });
    const sent = s.h.fake.calls('POST', /\/issues\/11\/comments$/).at(-1)!;
    expect(sent.body).toEqual({ body: 'hello' });
    expect(JSON.stringify(sent.headers)).not.toContain('urgent');
  });

  it('a create sent with createOptions is not re-sent by the retry plugin; a plain one is', async () => {
    const s = await scene();
    const before = s.h.fake.calls('POST', /\/issues\/11\/comments$/).length;
    s.h.fake.failNext(1, 502, { method: 'POST', path: /\/issues\/11\/comments$/ });
    await expect(s.octokit.rest.issues.createComment({ owner: OWNER, repo: REPO, issue_number: 11, body: 'once', ...createOptions('normal') })).rejects.toMatchObject({ status: 502 });
    expect(s.h.fake.calls('POST', /\/issues\/11\/comments$/)).toHaveLength(before + 1);
    s.h.fake.failNext(1, 502, { method: 'POST', path: /\/issues\/11\/comments$/ });
    await s.octokit.rest.issues.createComment({ owner: OWNER, repo: REPO, issue_number: 11, body: 'again', ...writeOptions('normal') });
    expect(s.h.fake.calls('POST', /\/issues\/11\/comments$/)).toHaveLength(before + 3);
  });

  it('each write of the forge names its priority: escalations urgent, labels and new comments normal, status edits background', async () => {
    const s = await scene();
    const snapshot = await s.snapshot();
    await s.forge.escalate({ ...snapshot, state: 'ESCALATED' }, { task_id: 's1', attempts: 1, last_error: 'no' }, { id: '11.90', retry: false });
    await s.forge.comment(11, 'a reply', { marker: effectMarker('11.91'), retry: false });
    const writes = s.seen.filter((r) => r.method !== 'GET');
    expect(writes.length).toBeGreaterThan(0);
    for (const w of writes) expect(w.priority, `${w.method} ${w.url}`).toMatch(/^(urgent|normal|background)$/);
    expect(writes.filter((w) => w.method === 'POST' && w.url.endsWith('/comments')).map((w) => [w.priority, w.retries])).toEqual([
      ['urgent', 0],
      ['normal', 0],
    ]);
    expect(writes.filter((w) => w.method === 'PATCH' && w.url.includes('/issues/comments/')).map((w) => w.priority)).toEqual(['background']);
    expect(writes.some((w) => w.url === '/graphql' && w.priority === 'normal')).toBe(true);
  });
});
