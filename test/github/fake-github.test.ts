import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Octokit } from '@octokit/rest';
import nock from 'nock';
import { pino } from 'pino';
import { createNodeMiddleware, Probot, ProbotOctokit } from 'probot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeGitHub, type FakeGitHubOptions, fakeGitHub } from '../helpers/fake-github.js';
import { checkRequest, checkWork, matchOperation } from '../helpers/openapi-check.js';
import {
  deliverWebhook,
  installationCreated,
  issueCommentCreated,
  issueCommentDeleted,
  issueCommentEdited,
  issuesClosed,
  issuesLabeled,
  issuesUnlabeled,
  pullRequestClosed,
  pullRequestReviewSubmitted,
  signPayload,
  toEvent,
  webhookHeaders,
} from '../helpers/webhook-payloads.js';

const owner = 'octo';
const repo = 'demo';
const installationId = 4242;
const repoArgs = { owner, repo };

function options(extra: Partial<FakeGitHubOptions> = {}): FakeGitHubOptions {
  return {
    owner,
    repo,
    installationId,
    collaborators: { alice: 'admin', mia: 'maintain', wes: 'write', tri: 'triage', rob: 'read', nora: 'none' },
    issues: [
      { number: 1, title: 'Replace Passport', body: 'Do it', user: 'alice', labels: ['bug'] },
      { number: 2, title: 'Second', body: null, user: 'wes', assignees: ['wes'] },
    ],
    files: { '.github/goal-loop.yml': 'label: goal\nmax_retries: 2\n' },
    ...extra,
  };
}

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

let keyPem: string | undefined;
function privateKey(): string {
  keyPem ??= generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  }).privateKey;
  return keyPem;
}

describe('openapi-check', () => {
  it('accepts real operations and finds their templates', () => {
    expect(checkRequest('POST', '/repos/o/r/issues/1/comments', { body: 'hi' })).toEqual([]);
    expect(checkRequest('GET', '/repos/o/r/issues/1/comments?per_page=100&page=2', undefined)).toEqual([]);
    expect(checkRequest('DELETE', '/repos/o/r/issues/1/labels/goal%3Arunning', undefined)).toEqual([]);
    expect(checkRequest('GET', '/repos/o/r/contents/.github%2Fgoal-loop.yml', undefined)).toEqual([]);
    expect(checkRequest('POST', '/graphql', { query: 'mutation { x }' })).toEqual([]);
    expect(matchOperation('GET', '/repos/o/r/issues/comments/5')?.template).toBe('/repos/{owner}/{repo}/issues/comments/{comment_id}');
    expect(matchOperation('GET', '/repos/o/r/issues/5')?.params).toEqual({ owner: 'o', repo: 'r', issue_number: '5' });
    expect(matchOperation('GET', '/repos/o/r/contents/a/b/c.txt')?.params.path).toBe('a/b/c.txt');
  });

  it('reports unknown paths, missing required fields, bad enums and missing query parameters', () => {
    expect(checkRequest('POST', '/repos/o/r/issues/1/commentz', { body: 'x' })[0]).toMatch(/no operation/);
    expect(checkRequest('PUT', '/repos/o/r/issues/1/comments', { body: 'x' })[0]).toMatch(/no operation/);
    expect(checkRequest('POST', '/repos/o/r/issues/1/comments', {})).toEqual(['POST /repos/{owner}/{repo}/issues/{issue_number}/comments: missing required body field "body"']);
    expect(checkRequest('POST', '/repos/o/r/pulls', { head: 'x', title: 't' }).join()).toMatch(/"base"/);
    expect(checkRequest('POST', '/repos/o/r/check-runs', { head_sha: 'abc' }).join()).toMatch(/"name"/);
    expect(checkRequest('POST', '/repos/o/r/issues/comments/5/reactions', { content: 'thumbsup' }).join()).toMatch(/not one of/);
    expect(checkRequest('POST', '/repos/o/r/issues/comments/5/reactions', undefined).join()).toMatch(/required/);
    expect(checkRequest('GET', '/search/issues', undefined).join()).toMatch(/"q"/);
    expect(checkRequest('POST', '/graphql', {}).join()).toMatch(/query/);
  });

  it('accepts a oneOf/anyOf body when one branch is satisfied', () => {
    // labels: oneOf of objects; check-run update: anyOf (conclusion required in one branch only).
    expect(checkRequest('PUT', '/repos/o/r/issues/1/labels', { labels: ['a'] })).toEqual([]);
    expect(checkRequest('POST', '/repos/o/r/issues/1/labels', { labels: ['a'] })).toEqual([]);
    expect(checkRequest('PATCH', '/repos/o/r/check-runs/3', { status: 'in_progress' })).toEqual([]);
    expect(checkRequest('PATCH', '/repos/o/r/check-runs/3', { conclusion: 'success' })).toEqual([]);
  });

  it('is cheap enough to run on every request: one read of the description, one index, a few templates tried', () => {
    checkRequest('GET', '/repos/o/r', undefined);
    const before = checkWork();
    for (let i = 0; i < 10; i++) checkRequest('PATCH', '/repos/o/r/issues/comments/12', { body: 'x' });
    const after = checkWork();
    expect(checkRequest('PATCH', '/repos/o/r/issues/comments/12', { body: 'x' })).toEqual([]);
    expect(after).toMatchObject({ specReads: 1, indexBuilds: 1 });
    // Only the templates of the request's own method and segment count, not the whole description.
    const perRequest = (after.templatesTried - before.templatesTried) / 10;
    expect(perRequest).toBeGreaterThanOrEqual(1);
    expect(perRequest).toBeLessThan(after.operations / 50);
  });
});

describe('fakeGitHub through @octokit/rest', () => {
  let fake: FakeGitHub;
  let octokit: Octokit;
  beforeEach(() => {
    fake = fakeGitHub(options());
    octokit = new Octokit({ auth: 'test-token', log: quiet });
  });
  afterEach(() => fake.stop());

  it('reports a bad path and a missing required body field as violations', async () => {
    await expect(octokit.request('GET /repos/{owner}/{repo}/issuez/{n}', { ...repoArgs, n: 1 })).rejects.toMatchObject({ status: 404 });
    expect(fake.violations).toHaveLength(1);
    expect(fake.violations[0]).toMatch(/GET \/repos\/octo\/demo\/issuez\/1: no operation/);
    expect(fake.unhandled).toEqual(['GET /repos/octo/demo/issuez/1']);

    const noBody = { ...repoArgs, issue_number: 1 } as { owner: string; repo: string; issue_number: number; body: string };
    await expect(octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', noBody)).rejects.toMatchObject({
      status: 422,
    });
    expect(fake.violations[1]).toMatch(/missing required body field "body"/);
    expect(fake.commentsOn(1)).toEqual([]);

    await expect(octokit.rest.reactions.createForIssueComment({ ...repoArgs, comment_id: 1, content: 'thumbsup' as '+1' })).rejects.toMatchObject({
      status: 422,
    });
    expect(fake.violations).toHaveLength(3);

    await octokit.rest.issues.get({ ...repoArgs, issue_number: 1 });
    expect(fake.violations).toHaveLength(3);
    expect(fake.requests.map((r) => `${r.method} ${r.template ?? '?'} ${r.status}`)).toEqual([
      'GET ? 404',
      'POST /repos/{owner}/{repo}/issues/{issue_number}/comments 422',
      'POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions 422',
      'GET /repos/{owner}/{repo}/issues/{issue_number} 200',
    ]);
  });

  it('paginates issue comments with a Link header', async () => {
    for (let i = 0; i < 75; i++) fake.addComment(1, `comment ${i}`, 'alice');
    const first = await octokit.rest.issues.listComments({ ...repoArgs, issue_number: 1, per_page: 30 });
    expect(first.data).toHaveLength(30);
    expect(first.headers.link).toContain('page=2>; rel="next"');
    expect(first.headers.link).toContain('page=3>; rel="last"');
    const all = await octokit.paginate(octokit.rest.issues.listComments, { ...repoArgs, issue_number: 1, per_page: 30 });
    expect(all.map((c) => c.body)).toEqual(Array.from({ length: 75 }, (_, i) => `comment ${i}`));
    expect(fake.calls('GET', /\/issues\/1\/comments/).map((r) => r.query.page ?? '1')).toEqual(['1', '1', '2', '3']);
    const last = await octokit.rest.issues.listComments({ ...repoArgs, issue_number: 1, per_page: 30, page: 3 });
    expect(last.data).toHaveLength(15);
    expect(last.headers.link).not.toContain('rel="next"');
    expect(fake.violations).toEqual([]);
  });

  it('failNext(2, 502) makes plain fetches fail twice, then answers', async () => {
    fake.failNext(2, 502);
    const get = (): Promise<Response> => fetch(`https://api.github.com/repos/${owner}/${repo}/issues/1`);
    expect((await get()).status).toBe(502);
    expect((await get()).status).toBe(502);
    const ok = await get();
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { title: string }).title).toBe('Replace Passport');
    expect(fake.requests.map((r) => r.fault ?? r.status)).toEqual([502, 502, 200]);
    expect(fake.pendingFaults()).toBe(0);
  });

  it("'performed-then-502' performs the request, then answers 502 (a create a client must not send again blindly)", async () => {
    fake.failNext(1, 'performed-then-502', { method: 'POST', path: /\/comments$/ });
    const post = (body: string) =>
      fetch(`https://api.github.com/repos/${owner}/${repo}/issues/1/comments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ body }) });
    expect((await post('first')).status).toBe(502);
    expect(fake.commentsOn(1).map((c) => c.body)).toEqual(['first']);
    expect((await post('second')).status).toBe(201);
    expect(fake.requests.map((r) => r.fault ?? r.status)).toEqual(['performed-then-502', 201]);
  });

  it('counts writes: not reads, not GraphQL queries; mutations and label swaps by kind, and by goal', async () => {
    const json = { 'content-type': 'application/json' };
    await fetch(`https://api.github.com/repos/${owner}/${repo}/issues/1`);
    await fetch(`https://api.github.com/repos/${owner}/${repo}/issues/1/labels`, { method: 'POST', headers: json, body: JSON.stringify({ labels: ['goal:running'] }) });
    await fetch('https://api.github.com/graphql', { method: 'POST', headers: json, body: JSON.stringify({ query: 'query { viewer { login } }' }) });
    const running = fake.repoLabels.get('goal:running')!.nodeId;
    const review = (await (await fetch(`https://api.github.com/repos/${owner}/${repo}/labels`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'goal:review' }) })).json()) as {
      node_id: string;
    };
    const swap = await fetch('https://api.github.com/graphql', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        query:
          'mutation($issue: ID!, $add: [ID!]!, $remove: [ID!]!) { addLabelsToLabelable(input: { labelableId: $issue, labelIds: $add }) { clientMutationId } removeLabelsFromLabelable(input: { labelableId: $issue, labelIds: $remove }) { clientMutationId } }',
        variables: { issue: fake.issue(1).nodeId, add: [review.node_id], remove: [running] },
      }),
    });
    expect(((await swap.json()) as { errors?: unknown }).errors).toBeUndefined();
    expect(fake.labels(1)).toEqual(['bug', 'goal:review']);
    expect(fake.writesByKind()).toEqual({
      'POST /repos/{owner}/{repo}/issues/{issue_number}/labels': 1,
      'POST /repos/{owner}/{repo}/labels': 1,
      'mutation addLabelsToLabelable+removeLabelsFromLabelable': 1,
    });
    expect(fake.writesFor({ issue: 1 }).map((r) => r.pathname)).toEqual([`/repos/${owner}/${repo}/issues/1/labels`, '/graphql']);
    expect(fake.writesFor({ issue: 2 })).toEqual([]);
  });

  it('a fault filtered to writes passes reads by (a GraphQL query too); every request carries the time it arrived', async () => {
    const json = { 'content-type': 'application/json' };
    fake.failNext(1, 'secondary-rate-limit', { write: true });
    const before = Date.now();
    expect((await fetch(`https://api.github.com/repos/${owner}/${repo}/issues/1`)).status).toBe(200);
    expect((await fetch('https://api.github.com/graphql', { method: 'POST', headers: json, body: JSON.stringify({ query: 'query { viewer { login } }' }) })).status).toBe(200);
    const write = await fetch(`https://api.github.com/repos/${owner}/${repo}/issues/1/labels`, { method: 'POST', headers: json, body: JSON.stringify({ labels: ['x'] }) });
    expect(write.status).toBe(403);
    expect(fake.requests.map((r) => r.fault ?? r.status)).toEqual([200, 200, 'secondary-rate-limit']);
    const times = fake.requests.map((r) => r.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[0]).toBeGreaterThanOrEqual(before);
    expect(times[2]).toBeLessThanOrEqual(Date.now());
  });

  it('injects secondary and primary rate limits, filtered by method and path', async () => {
    fake.failNext(1, 'secondary-rate-limit', { method: 'POST', path: /\/comments$/ });
    fake.failNext(1, 'rate-limit', { path: /\/issues\/2$/ });
    expect((await fetch(`https://api.github.com/repos/${owner}/${repo}/issues/1`)).status).toBe(200);

    const secondary = await fetch(`https://api.github.com/repos/${owner}/${repo}/issues/1/comments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ body: 'x' }),
    });
    expect(secondary.status).toBe(403);
    expect(secondary.headers.get('retry-after')).toBe('1');
    expect(((await secondary.json()) as { message: string }).message).toMatch(/secondary rate limit/);

    const primary = await fetch(`https://api.github.com/repos/${owner}/${repo}/issues/2`);
    expect(primary.status).toBe(403);
    expect(primary.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = Number(primary.headers.get('x-ratelimit-reset'));
    expect(reset * 1000).toBeGreaterThan(Date.now());
    expect(reset * 1000).toBeLessThanOrEqual(Date.now() + 2000);

    expect((await fetch(`https://api.github.com/repos/${owner}/${repo}/issues/2`)).status).toBe(200);
    expect(fake.commentsOn(1)).toEqual([]);
  });

  it('tracks labels', async () => {
    const added = await octokit.rest.issues.addLabels({ ...repoArgs, issue_number: 1, labels: ['goal', 'goal:planning'] });
    expect(added.data.map((l) => l.name)).toEqual(['bug', 'goal', 'goal:planning']);
    await octokit.rest.issues.removeLabel({ ...repoArgs, issue_number: 1, name: 'goal:planning' });
    await expect(octokit.rest.issues.removeLabel({ ...repoArgs, issue_number: 1, name: 'goal:planning' })).rejects.toMatchObject({ status: 404 });
    expect(fake.labels(1)).toEqual(['bug', 'goal']);
    await octokit.rest.issues.setLabels({ ...repoArgs, issue_number: 1, labels: ['goal', 'goal:running'] });
    expect(fake.labels(1)).toEqual(['goal', 'goal:running']);
    const issue = await octokit.rest.issues.get({ ...repoArgs, issue_number: 1 });
    expect(issue.data.labels.map((l) => (typeof l === 'string' ? l : l.name))).toEqual(['goal', 'goal:running']);
    const listed = await octokit.rest.issues.listForRepo({ ...repoArgs, labels: 'goal', state: 'open' });
    expect(listed.data.map((i) => i.number)).toEqual([1]);
    expect(fake.violations).toEqual([]);
  });

  it('tracks comments, edits, deletions and reactions', async () => {
    const created = await octokit.rest.issues.createComment({ ...repoArgs, issue_number: 1, body: '<!-- goal-loop:status -->\nplanning' });
    expect(created.status).toBe(201);
    expect(created.data.user?.login).toBe('goal-loop[bot]');
    expect(created.data.html_url).toBe(`https://github.com/${owner}/${repo}/issues/1#issuecomment-${created.data.id}`);
    await octokit.rest.issues.updateComment({ ...repoArgs, comment_id: created.data.id, body: '<!-- goal-loop:status -->\nrunning' });
    expect(fake.commentsOn(1).map((c) => c.body)).toEqual(['<!-- goal-loop:status -->\nrunning']);
    expect(fake.commentsOn(1)[0]?.history).toHaveLength(2);

    const human = fake.addComment(1, '/goal status', 'alice');
    const r1 = await octokit.rest.reactions.createForIssueComment({ ...repoArgs, comment_id: human.id, content: 'eyes' });
    const r2 = await octokit.rest.reactions.createForIssueComment({ ...repoArgs, comment_id: human.id, content: 'eyes' });
    expect([r1.status, r2.status]).toEqual([201, 200]);
    await octokit.rest.reactions.createForIssueComment({ ...repoArgs, comment_id: human.id, content: '+1' });
    expect(fake.reactions.map((r) => `${r.subjectId}:${r.content}`)).toEqual([`${human.id}:eyes`, `${human.id}:+1`]);
    const eyes = await octokit.rest.reactions.listForIssueComment({ ...repoArgs, comment_id: human.id, content: 'eyes' });
    expect(eyes.data.map((r) => r.user?.login)).toEqual(['goal-loop[bot]']);
    await octokit.rest.reactions.deleteForIssueComment({ ...repoArgs, comment_id: human.id, reaction_id: r1.data.id });
    expect(fake.reactions.map((r) => r.content)).toEqual(['+1']);

    await octokit.rest.issues.deleteComment({ ...repoArgs, comment_id: created.data.id });
    expect(fake.commentsOn(1).map((c) => c.user)).toEqual(['alice']);
    await expect(octokit.rest.issues.updateComment({ ...repoArgs, comment_id: created.data.id, body: 'x' })).rejects.toMatchObject({ status: 404 });
    await expect(octokit.rest.issues.createComment({ ...repoArgs, issue_number: 99, body: 'x' })).rejects.toMatchObject({ status: 404 });
    expect(fake.violations).toEqual([]);
  });

  it('tracks pull requests: draft, head filter, updates and GraphQL ready-for-review', async () => {
    const created = await octokit.rest.pulls.create({ ...repoArgs, head: 'goal/1-replace-passport', base: 'main', title: 'Goal #1', body: 'Closes #1', draft: true });
    expect(created.status).toBe(201);
    expect(created.data).toMatchObject({ number: 3, draft: true, state: 'open', head: { ref: 'goal/1-replace-passport' }, base: { ref: 'main' } });
    expect(created.data.user?.login).toBe('goal-loop[bot]');
    await expect(octokit.rest.pulls.create({ ...repoArgs, head: `${owner}:goal/1-replace-passport`, base: 'main', title: 'again' })).rejects.toMatchObject({ status: 422 });

    const found = await octokit.rest.pulls.list({ ...repoArgs, head: `${owner}:goal/1-replace-passport`, state: 'all' });
    expect(found.data.map((p) => p.number)).toEqual([3]);
    expect((await octokit.rest.pulls.list({ ...repoArgs, head: `${owner}:goal/9-other`, state: 'all' })).data).toEqual([]);

    await octokit.rest.pulls.update({ ...repoArgs, pull_number: 3, body: 'Closes #1\n\n- [x] task-01' });
    expect(fake.pull(3).body).toBe('Closes #1\n\n- [x] task-01');
    const asIssue = await octokit.rest.issues.get({ ...repoArgs, issue_number: 3 });
    expect(asIssue.data.pull_request?.html_url).toBe(`https://github.com/${owner}/${repo}/pull/3`);
    await octokit.rest.issues.addLabels({ ...repoArgs, issue_number: 3, labels: ['goal:review'] });
    expect((await octokit.rest.pulls.get({ ...repoArgs, pull_number: 3 })).data.labels.map((l) => l.name)).toEqual(['goal:review']);

    const res = await octokit.graphql<{ markPullRequestReadyForReview: { pullRequest: { isDraft: boolean } } }>(
      'mutation($id: ID!) { markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } } }',
      { id: created.data.node_id },
    );
    expect(res.markPullRequestReadyForReview.pullRequest.isDraft).toBe(false);
    expect(fake.pull(3).draft).toBe(false);
    await expect(octokit.graphql('mutation { markPullRequestReadyForReview(input: { pullRequestId: "PR_nope" }) { clientMutationId } }')).rejects.toThrow(/Could not resolve/);

    fake.mergePull(3);
    expect((await octokit.rest.pulls.get({ ...repoArgs, pull_number: 3 })).data).toMatchObject({ merged: true, state: 'closed' });
    expect(fake.violations).toEqual([]);
  });

  it('serves reviews, their comments, and records replies', async () => {
    const pr = fake.addPull({ title: 'Goal #1', head: 'goal/1-x', draft: true });
    const { review, comments } = fake.addReview({
      pullNumber: pr.number,
      state: 'CHANGES_REQUESTED',
      body: 'Please rename',
      user: 'wes',
      comments: [{ body: 'rename this', path: 'src/a.ts', line: 3 }],
    });
    const got = await octokit.rest.pulls.getReview({ ...repoArgs, pull_number: pr.number, review_id: review.id });
    expect(got.data).toMatchObject({ state: 'CHANGES_REQUESTED', body: 'Please rename', user: { login: 'wes' } });
    const listed = await octokit.rest.pulls.listCommentsForReview({ ...repoArgs, pull_number: pr.number, review_id: review.id });
    expect(listed.data.map((c) => [c.body, c.path, c.line])).toEqual([['rename this', 'src/a.ts', 3]]);
    const first = comments[0];
    if (!first) throw new Error('no review comment');
    const reply = await octokit.rest.pulls.createReplyForReviewComment({ ...repoArgs, pull_number: pr.number, comment_id: first.id, body: 'Done in abc1234' });
    expect(reply.status).toBe(201);
    expect(fake.reviewComments.filter((c) => c.inReplyToId === first.id).map((c) => [c.user, c.body])).toEqual([['goal-loop[bot]', 'Done in abc1234']]);
    expect(fake.violations).toEqual([]);
  });

  it('counts body and output limits in UTF-8 bytes, as GitHub does: 30,000 × 中 is under 65,536 characters but over the limit', async () => {
    const wide = '中'.repeat(30_000);
    expect(wide.length).toBeLessThan(65_535);
    await expect(octokit.rest.issues.createComment({ ...repoArgs, issue_number: 1, body: wide })).rejects.toMatchObject({ status: 422 });
    await expect(octokit.rest.checks.create({ ...repoArgs, name: 'goal-loop', head_sha: 'b'.repeat(40), output: { title: 't', summary: wide } })).rejects.toMatchObject({ status: 422 });
    await expect(octokit.rest.pulls.create({ ...repoArgs, head: 'goal/1-replace-passport', base: 'main', title: 'Goal #1', body: wide })).rejects.toMatchObject({ status: 422 });
    expect(fake.violations.join('\n')).toMatch(/comment body is 90000 bytes/);
    expect(fake.violations.join('\n')).toMatch(/output\.summary is 90000 bytes/);
    expect(fake.violations.join('\n')).toMatch(/pull request body is 90000 bytes/);
    // Within the limit in bytes: taken.
    await octokit.rest.issues.createComment({ ...repoArgs, issue_number: 1, body: '中'.repeat(21_845) });
    expect(fake.commentsOn(1)).toHaveLength(1);
  });

  it('tracks check runs', async () => {
    const run = await octokit.rest.checks.create({ ...repoArgs, name: 'goal-loop', head_sha: 'a'.repeat(40), status: 'in_progress' });
    expect(run.status).toBe(201);
    await octokit.rest.checks.update({
      ...repoArgs,
      check_run_id: run.data.id,
      conclusion: 'success',
      output: { title: '2/2 tasks verified', summary: 'all good' },
    });
    expect(fake.checkRuns).toHaveLength(1);
    expect(fake.checkRuns[0]).toMatchObject({ name: 'goal-loop', status: 'completed', conclusion: 'success', output: { title: '2/2 tasks verified' } });
    const forRef = await octokit.rest.checks.listForRef({ ...repoArgs, ref: 'a'.repeat(40) });
    expect(forRef.data.total_count).toBe(1);
    expect(fake.violations).toEqual([]);
  });

  it('answers collaborator permissions the way GitHub does', async () => {
    const perm = async (username: string): Promise<[string, string | undefined]> => {
      const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({ ...repoArgs, username });
      return [data.permission, data.role_name];
    };
    expect(await perm('alice')).toEqual(['admin', 'admin']);
    expect(await perm('mia')).toEqual(['write', 'maintain']);
    expect(await perm('wes')).toEqual(['write', 'write']);
    expect(await perm('tri')).toEqual(['read', 'triage']);
    expect(await perm('rob')).toEqual(['read', 'read']);
    expect(await perm('nora')).toEqual(['none', 'none']);
    expect(await perm('stranger')).toEqual(['none', 'none']);
    fake.setPermission('stranger', 'write');
    expect(await perm('stranger')).toEqual(['write', 'write']);
  });

  it('serves repo files base64-encoded, and 404 for others', async () => {
    const { data } = await octokit.rest.repos.getContent({ ...repoArgs, path: '.github/goal-loop.yml' });
    if (Array.isArray(data) || data.type !== 'file') throw new Error('expected a file');
    expect(Buffer.from(data.content, 'base64').toString()).toBe('label: goal\nmax_retries: 2\n');
    await expect(octokit.rest.repos.getContent({ ...repoArgs, path: 'nope.txt' })).rejects.toMatchObject({ status: 404 });
    await expect(octokit.rest.repos.getContent({ owner, repo: '.github', path: '.github/goal-loop.yml' })).rejects.toMatchObject({ status: 404 });
    expect(fake.unhandled).toEqual([]);
  });

  it('stop() removes the interceptors', () => {
    expect(nock.activeMocks().length).toBeGreaterThan(0);
    fake.stop();
    expect(nock.activeMocks()).toEqual([]);
    fake = fakeGitHub(options());
  });
});

describe('fakeGitHub through Probot', () => {
  let fake: FakeGitHub;
  beforeEach(() => {
    fake = fakeGitHub(options({ strictAuth: true }));
  });
  afterEach(() => fake.stop());

  /**
   * With `throttled`, rate limits are retried (Probot's default only logs secondary ones), quickly.
   * Without, the throttle is off: plugin-throttling spaces write requests a second apart.
   */
  function probot(throttled = true): Probot {
    return new Probot({
      appId: 1,
      privateKey: privateKey(),
      log: pino({ level: 'silent' }),
      Octokit: ProbotOctokit.defaults((o: Record<string, unknown>) => ({
        ...o,
        throttle: throttled ? { ...(o.throttle as object), onSecondaryRateLimit: () => true, onRateLimit: () => true, retryAfterBaseValue: 5 } : { enabled: false },
        retry: { retryAfterBaseValue: 5 },
      })),
    });
  }

  it('exchanges an app JWT for an installation token and uses it', async () => {
    const octokit = await probot().auth(installationId);
    await octokit.rest.issues.createComment({ ...repoArgs, issue_number: 1, body: 'hello' });
    const cfg = await octokit.config.get({ ...repoArgs, path: '.github/goal-loop.yml' });
    expect(cfg.config).toEqual({ label: 'goal', max_retries: 2 });
    expect(fake.tokens).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({ method: 'POST', pathname: `/app/installations/${installationId}/access_tokens`, status: 201 });
    expect(fake.requests[1]?.headers.authorization).toBe(`token ${fake.tokens[0]}`);
    expect(fake.violations).toEqual([]);
  });

  it('faults skip the token exchange; a configured throttle retries rate limits and 502s', async () => {
    fake.failNext(1, 'secondary-rate-limit');
    fake.failNext(1, 'rate-limit');
    fake.failNext(2, 502);
    const octokit = await probot().auth(installationId);
    const { data } = await octokit.rest.issues.get({ ...repoArgs, issue_number: 1 });
    expect(data.title).toBe('Replace Passport');
    expect(fake.requests.map((r) => r.fault ?? r.status)).toEqual([201, 'secondary-rate-limit', 'rate-limit', 502, 502, 200]);
    expect(fake.violations).toEqual([]);
  });

  it('probot.receive with built payloads drives an app against the fake', async () => {
    const app = probot(false);
    const seen: string[] = [];
    await app.load((a) => {
      a.on('issues.labeled', async (context) => {
        seen.push(`${context.payload.label?.name} ${context.payload.repository.clone_url}`);
        const perm = await context.octokit.rest.repos.getCollaboratorPermissionLevel(context.repo({ username: context.payload.sender.login }));
        await context.octokit.rest.issues.createComment(context.issue({ body: `hi ${perm.data.role_name}` }));
        const cfg = await context.config<{ label: string }>('goal-loop.yml');
        seen.push(`label=${cfg?.label}`);
      });
      a.on('issue_comment.created', async (context) => {
        await context.octokit.rest.reactions.createForIssueComment(context.repo({ comment_id: context.payload.comment.id, content: 'eyes' as const }));
      });
    });
    const base = { owner, repo, installationId, cloneUrl: '/tmp/some/bare.git', sender: 'mia' };
    await app.receive(toEvent('issues', issuesLabeled({ ...base, issue: { number: 1, title: 'Replace Passport', user: 'alice' }, label: 'goal' })));
    const human = fake.addComment(1, '/goal status', 'mia');
    await app.receive(toEvent('issue_comment', issueCommentCreated({ ...base, issue: { number: 1 }, comment: { id: human.id, body: human.body } })));
    expect(seen).toEqual(['goal /tmp/some/bare.git', 'label=goal']);
    expect(fake.commentsOn(1).map((c) => `${c.user}: ${c.body}`)).toEqual(['goal-loop[bot]: hi maintain', 'mia: /goal status']);
    expect(fake.reactions.map((r) => [r.subjectId, r.content])).toEqual([[human.id, 'eyes']]);
    expect(fake.violations).toEqual([]);
    expect(fake.unhandled).toEqual([]);
  });

  it('accepts a signed delivery over local HTTP and rejects a bad signature', async () => {
    const secret = 'shh';
    const app = new Probot({ appId: 1, privateKey: privateKey(), secret, log: pino({ level: 'silent' }) });
    const got: number[] = [];
    const middleware = await createNodeMiddleware(
      (a) => {
        a.on('issues.closed', async (context) => void got.push(context.payload.issue.number));
      },
      { probot: app },
    );
    const server: Server = createServer((req, res) => void middleware(req, res, () => res.writeHead(404).end()));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/github/webhooks`;
      const payload = issuesClosed({ owner, repo, installationId, issue: { number: 2, title: 'Second' } });
      const ok = await deliverWebhook(url, { event: 'issues', payload, secret });
      expect(ok.status).toBe(200);
      expect(got).toEqual([2]);
      const body = JSON.stringify(payload);
      const bad = await fetch(url, { method: 'POST', headers: webhookHeaders({ event: 'issues', secret: 'wrong', body }), body });
      expect(bad.status).toBeGreaterThanOrEqual(400);
      expect(got).toEqual([2]);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('webhook payloads', () => {
  const base = { owner, repo, installationId, cloneUrl: '/srv/bare/demo.git' };

  it('adjust real examples, leaving nothing of the example repo behind', () => {
    const payloads = [
      issuesLabeled({ ...base, issue: { number: 7, title: 'T', body: 'B', labels: ['P1'], user: 'alice' }, label: 'goal', sender: 'wes' }),
      issuesUnlabeled({ ...base, issue: { number: 7, labels: ['goal', 'P1'] }, label: 'goal' }),
      issuesClosed({ ...base, issue: { number: 7 } }),
      issueCommentCreated({ ...base, issue: { number: 7 }, comment: { id: 55, body: '/goal start' }, sender: 'wes' }),
      issueCommentEdited({ ...base, issue: { number: 7 }, comment: { id: 55, body: '/goal stop' }, previousBody: '/goal start' }),
      issueCommentDeleted({ ...base, issue: { number: 7 }, comment: { id: 55, body: '/goal stop' } }),
      pullRequestClosed({ ...base, pull: { number: 8, head: 'goal/7-t' }, merged: true }),
      pullRequestClosed({ ...base, pull: { number: 8, head: 'goal/7-t' }, merged: false }),
      pullRequestReviewSubmitted({ ...base, pull: { number: 8, head: 'goal/7-t' }, review: { id: 9, state: 'changes_requested', body: 'fix' }, sender: 'wes' }),
      installationCreated({ owner, repo, installationId }),
    ];
    for (const p of payloads) {
      const text = JSON.stringify(p);
      expect(text).not.toMatch(/Codertocat|Hello-World|octo-org/);
      expect((p as { installation?: { id: number } }).installation?.id).toBe(installationId);
    }
  });

  it('sets the fields the app reads', () => {
    const labeled = issuesLabeled({
      ...base,
      issue: { number: 7, title: 'T', body: 'B', labels: ['P1'], user: 'alice', assignees: ['wes'] },
      label: 'goal',
      sender: 'wes',
    });
    expect(labeled.action).toBe('labeled');
    expect(labeled.repository).toMatchObject({ name: repo, full_name: `${owner}/${repo}`, clone_url: '/srv/bare/demo.git', owner: { login: owner } });
    expect(labeled.issue).toMatchObject({ number: 7, title: 'T', body: 'B', user: { login: 'alice' }, state: 'open' });
    expect(labeled.issue.labels?.map((l) => l.name)).toEqual(['P1', 'goal']);
    expect(labeled.issue.assignees?.map((a) => a?.login)).toEqual(['wes']);
    expect(labeled.label?.name).toBe('goal');
    expect(labeled.sender).toMatchObject({ login: 'wes', type: 'User' });

    const byBot = issueCommentCreated({ ...base, issue: { number: 8, isPullRequest: true }, comment: { body: 'status' }, sender: 'goal-loop[bot]' });
    expect(byBot.sender.type).toBe('Bot');
    expect(byBot.comment.user?.login).toBe('goal-loop[bot]');
    expect(byBot.issue.pull_request?.html_url).toBe(`https://github.com/${owner}/${repo}/pull/8`);

    const edited = issueCommentEdited({ ...base, issue: { number: 7 }, comment: { id: 55, body: 'new' }, previousBody: 'old' });
    expect([edited.action, edited.comment.id, edited.comment.body, edited.changes.body?.from]).toEqual(['edited', 55, 'new', 'old']);

    const merged = pullRequestClosed({ ...base, pull: { number: 8, head: 'goal/7-t', headSha: 'c'.repeat(40) }, merged: true });
    expect(merged.pull_request).toMatchObject({ number: 8, merged: true, state: 'closed', head: { ref: 'goal/7-t', sha: 'c'.repeat(40) } });
    expect(merged.pull_request.merged_at).not.toBeNull();
    expect(merged.number).toBe(8);
    const unmerged = pullRequestClosed({ ...base, pull: { number: 8, head: 'goal/7-t' }, merged: false });
    expect([unmerged.pull_request.merged, unmerged.pull_request.merged_at]).toEqual([false, null]);

    const review = pullRequestReviewSubmitted({ ...base, pull: { number: 8, head: 'goal/7-t' }, review: { id: 9, state: 'changes_requested', body: 'fix' }, sender: 'wes' });
    expect(review.review).toMatchObject({ id: 9, state: 'changes_requested', body: 'fix', user: { login: 'wes' } });
    expect(review.pull_request.head.ref).toBe('goal/7-t');

    const closed = issuesClosed({ ...base, issue: { number: 7 } });
    expect([closed.action, closed.issue.state]).toEqual(['closed', 'closed']);

    const installed = installationCreated({ owner, repo, installationId, repositories: [repo, 'other'] });
    expect(installed.installation.account).toMatchObject({ login: owner });
    expect(installed.repositories?.map((r) => r.full_name)).toEqual([`${owner}/${repo}`, `${owner}/other`]);
  });

  it('signs like GitHub', () => {
    // The example from GitHub's "Validating webhook deliveries" documentation.
    expect(signPayload("It's a Secret to Everybody", 'Hello, World!')).toBe('sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17');
    const h = webhookHeaders({ event: 'issues', deliveryId: 'd-1', secret: 's', body: '{}' });
    expect(h).toMatchObject({ 'x-github-event': 'issues', 'x-github-delivery': 'd-1', 'x-hub-signature-256': signPayload('s', '{}') });
  });
});
