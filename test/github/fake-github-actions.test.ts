import { Octokit } from '@octokit/rest';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeDispatch, type FakeGitHub, type FakeGitHubOptions, fakeGitHub } from '../helpers/fake-github.js';
import { checkResponse } from '../helpers/openapi-response-check.js';

/**
 * The fake as a GitHub Actions run sees GitHub: a workflow token (GitHub Actions' own app, or a
 * user's personal access token), GET /user, workflow runs and workflow dispatches.
 */

const owner = 'octo';
const repo = 'demo';
const repoArgs = { owner, repo };
const WORKFLOW_TOKEN = 'ghs_workflowTokenOfThisRun000000000000000';
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function options(extra: Partial<FakeGitHubOptions> = {}): FakeGitHubOptions {
  return {
    owner,
    repo,
    installationId: 4242,
    appSlug: 'github-actions',
    appId: 15368,
    collaborators: { alice: 'admin' },
    issues: [{ number: 1, title: 'Replace Passport', body: 'Do it', user: 'alice', labels: ['goal'] }],
    workflowToken: WORKFLOW_TOKEN,
    ...extra,
  };
}

// ---------- the tests ----------

const api = (path: string, token: string | undefined, init: { method?: string; body?: unknown; scheme?: 'token' | 'Bearer' } = {}): Promise<Response> =>
  fetch(`https://api.github.com${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(token === undefined ? {} : { authorization: `${init.scheme ?? 'token'} ${token}` }),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });

/** An installation token, exchanged as an App would (the fake does not check the JWT's signature). */
async function installationToken(): Promise<string> {
  const res = await fetch('https://api.github.com/app/installations/4242/access_tokens', { method: 'POST', headers: { authorization: 'Bearer a.b.c' } });
  return ((await res.json()) as { token: string }).token;
}

describe('fakeGitHub with a workflow token', () => {
  let fake: FakeGitHub;
  afterEach(() => fake.stop());

  it('under strictAuth accepts the workflow token as `token` or `Bearer`, and an issued installation token; any other token is a violation', async () => {
    fake = fakeGitHub(options({ strictAuth: true }));
    expect((await api(`/repos/${owner}/${repo}/issues/1`, WORKFLOW_TOKEN)).status).toBe(200);
    expect((await api(`/repos/${owner}/${repo}/issues/1`, WORKFLOW_TOKEN, { scheme: 'Bearer' })).status).toBe(200);
    expect((await api(`/repos/${owner}/${repo}/issues/1`, await installationToken())).status).toBe(200);
    expect(fake.violations).toEqual([]);

    await api(`/repos/${owner}/${repo}/issues/1`, 'ghs_someOtherRunsToken0000000000000000000');
    await api(`/repos/${owner}/${repo}/issues/1`, undefined);
    expect(fake.violations).toEqual([
      'GET /repos/octo/demo/issues/1: not authenticated with an installation token from the fake nor its workflow token',
      'GET /repos/octo/demo/issues/1: not authenticated with an installation token from the fake nor its workflow token',
    ]);
  });

  it('without the option, the same token is a violation under strictAuth', async () => {
    fake = fakeGitHub(options({ strictAuth: true, workflowToken: undefined }));
    await api(`/repos/${owner}/${repo}/issues/1`, WORKFLOW_TOKEN);
    expect(fake.violations).toEqual(['GET /repos/octo/demo/issues/1: not authenticated with an installation token from the fake']);
  });

  it('writes as github-actions[bot], through GitHub Actions’ app (15368)', async () => {
    fake = fakeGitHub(options({ strictAuth: true }));
    const octokit = new Octokit({ auth: WORKFLOW_TOKEN, log: quiet });
    const { data: comment } = await octokit.rest.issues.createComment({ ...repoArgs, issue_number: 1, body: 'status' });
    expect(comment.user).toMatchObject({ login: 'github-actions[bot]', type: 'Bot' });
    expect(comment.performed_via_github_app).toMatchObject({ id: 15368, slug: 'github-actions' });
    expect(checkResponse('/repos/{owner}/{repo}/issues/{issue_number}/comments', 'post', 201, comment)).toEqual([]);
    expect(fake.commentsOn(1).map((c) => c.user)).toEqual(['github-actions[bot]']);

    const { data: pr } = await octokit.rest.pulls.create({ ...repoArgs, title: 'Goal #1', head: 'goal/1', base: 'main' });
    expect(pr.user?.login).toBe('github-actions[bot]');
    const { data: reaction } = await octokit.rest.reactions.createForIssue({ ...repoArgs, issue_number: 1, content: 'eyes' });
    expect(reaction.user?.login).toBe('github-actions[bot]');
    expect(fake.reactions.map((r) => r.user)).toEqual(['github-actions[bot]']);
    const { data: run } = await octokit.rest.checks.create({ ...repoArgs, name: 'goal-loop', head_sha: 'a'.repeat(40) });
    expect(run.app).toMatchObject({ id: 15368, slug: 'github-actions' });
    await octokit.rest.issues.addLabels({ ...repoArgs, issue_number: 1, labels: ['goal:running'] });
    expect(fake.labels(1)).toEqual(['goal', 'goal:running']);
    expect(fake.violations).toEqual([]);
  });

  it('GET /user: 403 to the workflow token and to an installation token, as GitHub answers an integration', async () => {
    fake = fakeGitHub(options());
    for (const token of [WORKFLOW_TOKEN, await installationToken()]) {
      const res = await api('/user', token);
      expect(res.status).toBe(403);
      const body = await res.json();
      expect(body).toMatchObject({ message: 'Resource not accessible by integration' });
      expect(checkResponse('/user', 'get', 403, body)).toEqual([]);
    }
    expect((await api('/user', undefined)).status).toBe(401);
    expect(fake.violations).toEqual([]);
  });

  it('GET /user under strictAuth: 401 Bad credentials to a token the fake does not know', async () => {
    fake = fakeGitHub(options({ strictAuth: true }));
    const res = await api('/user', 'ghp_notThisFakes');
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ message: 'Bad credentials' });
  });

  it('with tokenUser the token is that user’s: GET /user answers the user, and what it writes is by that user', async () => {
    fake = fakeGitHub(options({ strictAuth: true, tokenUser: 'mona' }));
    const octokit = new Octokit({ auth: WORKFLOW_TOKEN, log: quiet });
    const { data: me, status } = await octokit.rest.users.getAuthenticated();
    expect(status).toBe(200);
    expect(me).toMatchObject({ login: 'mona', type: 'User' });
    expect(checkResponse('/user', 'get', 200, me)).toEqual([]);

    const { data: comment } = await octokit.rest.issues.createComment({ ...repoArgs, issue_number: 1, body: 'status' });
    expect(comment.user).toMatchObject({ login: 'mona', type: 'User' });
    expect(comment.performed_via_github_app).toBeNull();
    const { data: pr } = await octokit.rest.pulls.create({ ...repoArgs, title: 'Goal #1', head: 'goal/1', base: 'main' });
    expect(pr.user?.login).toBe('mona');
    expect(fake.pull(pr.number).user).toBe('mona');
    await octokit.rest.reactions.createForIssue({ ...repoArgs, issue_number: 1, content: 'eyes' });
    expect(fake.reactions.map((r) => r.user)).toEqual(['mona']);
    expect(fake.violations).toEqual([]);
  });

  it('with tokenUser, check runs are refused as GitHub refuses them to anything but an App', async () => {
    fake = fakeGitHub(options({ tokenUser: 'mona' }));
    const octokit = new Octokit({ auth: WORKFLOW_TOKEN, log: quiet });
    await expect(octokit.rest.checks.create({ ...repoArgs, name: 'goal-loop', head_sha: 'a'.repeat(40) })).rejects.toMatchObject({
      status: 403,
      message: expect.stringContaining('You must authenticate via a GitHub App.'),
    });
    expect(fake.checkRuns).toEqual([]);
  });
});

describe('fakeGitHub workflow runs', () => {
  let fake: FakeGitHub;
  afterEach(() => fake.stop());

  it('serves a run set by the test in GitHub’s shape, follows its changes, and 404s an unknown one', async () => {
    fake = fakeGitHub(options({ strictAuth: true }));
    const octokit = new Octokit({ auth: WORKFLOW_TOKEN, log: quiet });
    fake.addPull({ title: 'Goal #1', head: 'goal/1' });
    fake.setWorkflowRun({ id: 77, status: 'in_progress', conclusion: null, path: '.github/workflows/goal-loop.yml', event: 'issues', head_branch: 'goal/1' });
    const { data: run } = await octokit.rest.actions.getWorkflowRun({ ...repoArgs, run_id: 77 });
    expect(run).toMatchObject({ id: 77, status: 'in_progress', conclusion: null, path: '.github/workflows/goal-loop.yml', event: 'issues', head_branch: 'goal/1' });
    expect(run.pull_requests?.map((p) => p.number)).toEqual([2]);
    expect(checkResponse('/repos/{owner}/{repo}/actions/runs/{run_id}', 'get', 200, run)).toEqual([]);

    fake.setWorkflowRun({ id: 77, status: 'completed', conclusion: 'cancelled', path: '.github/workflows/goal-loop.yml', event: 'issues', head_branch: 'goal/1' });
    expect(fake.workflowRuns.get(77)?.status).toBe('completed');
    const { data: done } = await octokit.rest.actions.getWorkflowRun({ ...repoArgs, run_id: 77 });
    expect([done.status, done.conclusion]).toEqual(['completed', 'cancelled']);

    await expect(octokit.rest.actions.getWorkflowRun({ ...repoArgs, run_id: 78 })).rejects.toMatchObject({ status: 404 });
    expect(fake.violations).toEqual([]);
    expect(fake.unhandled).toEqual([]);
  });
});

describe('fakeGitHub workflow dispatches', () => {
  let fake: FakeGitHub;
  afterEach(() => fake.stop());

  it('records a dispatch by file name or number, answers 204 and tells the test', async () => {
    const seen: FakeDispatch[] = [];
    fake = fakeGitHub(options({ strictAuth: true, onDispatch: (d) => seen.push(d) }));
    const octokit = new Octokit({ auth: WORKFLOW_TOKEN, log: quiet });
    const res = await octokit.rest.actions.createWorkflowDispatch({ ...repoArgs, workflow_id: 'goal-loop.yml', ref: 'main', inputs: { issue: '1' } });
    expect(res.status).toBe(204);
    await octokit.rest.actions.createWorkflowDispatch({ ...repoArgs, workflow_id: 161335, ref: 'refs/heads/main' });
    const want = [
      { workflowId: 'goal-loop.yml', ref: 'main', inputs: { issue: '1' } },
      { workflowId: '161335', ref: 'refs/heads/main', inputs: {} },
    ];
    expect(fake.dispatches).toEqual(want);
    expect(seen).toEqual(want);
    expect(fake.violations).toEqual([]);
    expect(fake.unhandled).toEqual([]);
  });

  it('refuses a dispatch without a ref (422), records nothing and calls nobody', async () => {
    const seen: FakeDispatch[] = [];
    fake = fakeGitHub(options({ onDispatch: (d) => seen.push(d) }));
    const post = (body: unknown) => api(`/repos/${owner}/${repo}/actions/workflows/goal-loop.yml/dispatches`, WORKFLOW_TOKEN, { method: 'POST', body });
    expect((await post({ inputs: { issue: '1' } })).status).toBe(422);
    expect(fake.violations).toEqual(['POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches: missing required body field "ref"']);
    expect((await post({ ref: '' })).status).toBe(422);
    expect(fake.dispatches).toEqual([]);
    expect(seen).toEqual([]);
  });

  it('refuses a ref the repository lacks when the test resolves refs, as GitHub does (422)', async () => {
    fake = fakeGitHub(options({ resolveSha: (ref) => (ref === 'main' ? 'b'.repeat(40) : undefined) }));
    const octokit = new Octokit({ auth: WORKFLOW_TOKEN, log: quiet });
    await expect(octokit.rest.actions.createWorkflowDispatch({ ...repoArgs, workflow_id: 'goal-loop.yml', ref: 'nope' })).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining('No ref found for: nope'),
    });
    await octokit.rest.actions.createWorkflowDispatch({ ...repoArgs, workflow_id: 'goal-loop.yml', ref: 'main' });
    expect(fake.dispatches.map((d) => d.ref)).toEqual(['main']);
  });

  it('with return_run_details answers the queued run it made, which GET serves', async () => {
    fake = fakeGitHub(options());
    const octokit = new Octokit({ auth: WORKFLOW_TOKEN, log: quiet });
    const res = await octokit.request('POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches', {
      ...repoArgs,
      workflow_id: 'goal-loop.yml',
      ref: 'main',
      return_run_details: true,
    });
    expect(res.status).toBe(200);
    expect(checkResponse('/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches', 'post', 200, res.data)).toEqual([]);
    const id = (res.data as { workflow_run_id: number }).workflow_run_id;
    const { data: run } = await octokit.rest.actions.getWorkflowRun({ ...repoArgs, run_id: id });
    expect(run).toMatchObject({ status: 'queued', event: 'workflow_dispatch', head_branch: 'main', path: '.github/workflows/goal-loop.yml' });
  });
});

describe('fakeGitHub faults on the Actions routes', () => {
  let fake: FakeGitHub;
  afterEach(() => fake.stop());

  it('a 502 loses the dispatch; performed-then-502 records it and still answers 502', async () => {
    fake = fakeGitHub(options());
    const post = () => api(`/repos/${owner}/${repo}/actions/workflows/goal-loop.yml/dispatches`, WORKFLOW_TOKEN, { method: 'POST', body: { ref: 'main' } });
    fake.failNext(1, 502, { path: /\/dispatches$/ });
    expect((await post()).status).toBe(502);
    expect(fake.dispatches).toEqual([]);
    fake.failNext(1, 'performed-then-502', { path: /\/dispatches$/ });
    expect((await post()).status).toBe(502);
    expect(fake.dispatches).toHaveLength(1);
    expect((await post()).status).toBe(204);
    expect(fake.dispatches).toHaveLength(2);
  });

  it('rate limits apply to GET /user and to runs like any route', async () => {
    fake = fakeGitHub(options());
    fake.setWorkflowRun({ id: 5, status: 'queued', conclusion: null, path: '.github/workflows/goal-loop.yml', event: 'workflow_dispatch', head_branch: 'main' });
    fake.failNext(1, 'secondary-rate-limit', { path: /^\/user$/ });
    fake.failNext(1, 'rate-limit', { path: /\/actions\/runs\// });
    const user = await api('/user', WORKFLOW_TOKEN);
    expect([user.status, user.headers.get('retry-after')]).toEqual([403, '1']);
    const run = await api(`/repos/${owner}/${repo}/actions/runs/5`, WORKFLOW_TOKEN);
    expect([run.status, run.headers.get('x-ratelimit-remaining')]).toEqual([403, '0']);
    expect((await api(`/repos/${owner}/${repo}/actions/runs/5`, WORKFLOW_TOKEN)).status).toBe(200);
    expect(fake.pendingFaults()).toBe(0);
  });
});
