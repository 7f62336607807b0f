import { Probot } from 'probot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { goalLoopOctokit } from '../../src/github/octokit.js';
import { MIN_PAUSE_S, writePriorityOf } from '../../src/github/write-budget-plugin.js';
import { MemoryWriteBudget } from '../../src/ledger/memory-write-budget.js';
import type { WriteBudgetStore, WriteLimits, WriteRequest } from '../../src/ports/write-budget.js';
import { type FakeGitHub, fakeGitHub } from '../helpers/fake-github.js';
import { privateKey, silent } from '../helpers/github-app-harness.js';

const owner = 'octo';
const repo = 'demo';
const installationId = 4242;
const BASE_MS = 5; // milliseconds per second of retry-after
const roomy: WriteLimits = { windows: [{ ms: 60_000, max: 1000 }], shares: { urgent: 1, normal: 0.8, background: 0.5 } };

/** The process-local budget, recording what it is asked and when a pause was set. */
function recordingBudget() {
  const inner = new MemoryWriteBudget();
  const asked: Array<Pick<WriteRequest, 'installation' | 'priority'> & { at: number; took: boolean }> = [];
  const pauses: Array<{ installation: string; forMs: number; at: number }> = [];
  const store: WriteBudgetStore = {
    tryTakeWrite: async (request) => {
      const decision = await inner.tryTakeWrite(request);
      asked.push({ installation: request.installation, priority: request.priority, at: Date.now(), took: decision.take });
      return decision;
    },
    pauseWrites: async (installation, forMs, atMs) => {
      pauses.push({ installation, forMs, at: Date.now() });
      await inner.pauseWrites(installation, forMs, atMs);
    },
    trimWrites: (keepMs, atMs) => inner.trimWrites(keepMs, atMs),
  };
  return { store, asked, pauses };
}

describe('the write budget in Octokit', () => {
  let fake: FakeGitHub;
  let budget: ReturnType<typeof recordingBudget>;
  const client = async () => {
    const Octokit = goalLoopOctokit({ retryAfterBaseMs: BASE_MS, writeMinTimeMs: 0, writeBudget: { store: budget.store, limits: roomy, take: { jitterMs: () => 0 } } });
    const probot = new Probot({ appId: 1, privateKey: privateKey(), log: silent, Octokit });
    return probot.auth(installationId);
  };
  beforeEach(() => {
    fake = fakeGitHub({ owner, repo, installationId, issues: [{ number: 1, title: 'One', body: 'Do it', user: 'alice' }] });
    budget = recordingBudget();
  });
  afterEach(() => fake.stop());

  it('takes one slot of the installation per write, by the request’s priority; reads and the token exchange take none', async () => {
    const octokit = await client();
    await octokit.rest.issues.get({ owner, repo, issue_number: 1 });
    const { data: comment } = await octokit.rest.issues.createComment({ owner, repo, issue_number: 1, body: 'status' });
    await octokit.rest.issues.updateComment({ owner, repo, comment_id: comment.id, body: 'status, later' });
    await octokit.rest.issues.createComment({ owner, repo, issue_number: 1, body: 'needs you', request: { writePriority: 'urgent' } });
    const pr = fake.addPull({ title: 'Goal', head: 'goal/1', draft: true });
    await octokit.graphql('mutation($id: ID!) { markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } } }', { id: pr.nodeId });
    expect(budget.asked.map((a) => [a.installation, a.priority, a.took])).toEqual([
      ['4242', 'normal', true],
      ['4242', 'background', true],
      ['4242', 'urgent', true],
      ['4242', 'normal', true],
    ]);
    expect(fake.pulls[0]!.draft).toBe(false);
    expect(fake.requests.map((r) => `${r.method} ${r.template ?? r.pathname}`)).toEqual([
      'POST /app/installations/{installation_id}/access_tokens',
      'GET /repos/{owner}/{repo}/issues/{issue_number}',
      'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
      'PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}',
      'POST /repos/{owner}/{repo}/issues/{issue_number}/comments',
      'POST /graphql',
    ]);
  });

  it('pauses every client of the installation on a secondary rate limit, for at least a minute of retry-after, and retries after it', async () => {
    const first = await client();
    const second = await client();
    fake.failNext(1, 'secondary-rate-limit', { method: 'POST', path: /\/comments$/ });
    // The second client writes as soon as the pause is set: it must wait for the pause to end.
    let secondWrite: Promise<unknown> | undefined;
    const pause = budget.store.pauseWrites.bind(budget.store);
    budget.store.pauseWrites = async (...args) => {
      await pause(...args);
      secondWrite ??= second.rest.issues.createComment({ owner, repo, issue_number: 1, body: 'from another process' });
    };
    await first.rest.issues.createComment({ owner, repo, issue_number: 1, body: 'hello' });
    const returnedAt = Date.now();
    await secondWrite;
    // The fake says retry-after: 1 (s); the pause is the minimum, 60 s of the shrunk base.
    expect(budget.pauses).toEqual([{ installation: '4242', forMs: MIN_PAUSE_S * BASE_MS, at: expect.any(Number) }]);
    const pausedUntil = budget.pauses[0]!.at + MIN_PAUSE_S * BASE_MS;
    expect(returnedAt).toBeGreaterThanOrEqual(pausedUntil); // the retry went out after the pause
    const secondTaken = budget.asked.filter((a) => a.took).at(-1)!;
    expect(secondTaken.at).toBeGreaterThanOrEqual(pausedUntil);
    expect(budget.asked.filter((a) => !a.took).length).toBeGreaterThan(0); // it was told to wait
    expect(fake.requests.filter((r) => r.method === 'POST' && r.pathname.endsWith('/comments')).map((r) => r.fault ?? r.status)).toEqual(['secondary-rate-limit', 201, 201]);
  });
});

describe('writePriorityOf', () => {
  it('budgets writes only: not reads, GraphQL queries or the App’s own endpoints', () => {
    expect(writePriorityOf({ method: 'GET', url: '/repos/{owner}/{repo}/issues' })).toBeUndefined();
    expect(writePriorityOf({ method: 'HEAD', url: '/repos/{owner}/{repo}' })).toBeUndefined();
    expect(writePriorityOf({ method: 'POST', url: '/app/installations/{installation_id}/access_tokens' })).toBeUndefined();
    expect(writePriorityOf({ method: 'POST', url: '/graphql', query: 'query { viewer { login } }' })).toBeUndefined();
    expect(writePriorityOf({ method: 'POST', url: '/graphql', query: '\n  mutation Ready($id: ID!) { markPullRequestReadyForReview(input: { pullRequestId: $id }) { clientMutationId } }' })).toBe(
      'normal',
    );
  });

  it('makes a status-comment edit background, other writes normal, and lets the caller name the priority', () => {
    expect(writePriorityOf({ method: 'PATCH', url: '/repos/{owner}/{repo}/issues/comments/{comment_id}' })).toBe('background');
    expect(writePriorityOf({ method: 'PATCH', url: '/repos/o/r/issues/comments/77' })).toBe('background');
    expect(writePriorityOf({ method: 'POST', url: '/repos/{owner}/{repo}/issues/{issue_number}/comments' })).toBe('normal');
    expect(writePriorityOf({ method: 'DELETE', url: '/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}' })).toBe('normal');
    expect(writePriorityOf({ method: 'PATCH', url: '/repos/{owner}/{repo}/issues/comments/{comment_id}', request: { writePriority: 'urgent' } })).toBe('urgent');
  });
});
