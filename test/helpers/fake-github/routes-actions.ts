import { fakeId } from '../webhook-payloads.js';
import type { Ctx } from './responses.js';
import type { FakeDispatch, FakeGitHubOptions, FakeWorkflowRun } from './types.js';
import { fakeSha, obj, type Reply, str, userJson } from './util.js';

/** Where GitHub redirects a job's log download: a short-lived signed URL on another host. */
export const LOGS_HOST = 'https://pipelines.actions.githubusercontent.com';

/** GitHub Actions: workflow runs (GET), workflow dispatches (recorded, answered 204), job logs (a redirect to LOGS_HOST). */
export function createActionRoutes(opts: FakeGitHubOptions, ctx: Ctx) {
  const {
    owner,
    repo,
    fullName,
    repoApi,
    repoHtml,
    repoId,
    newId,
    pulls,
    workflowRuns,
    dispatches,
    jobLogs,
    violations,
    minimalRepoJson,
    baseHeaders,
    json,
    notFound,
    invalid,
    noContent,
    files,
    paged,
  } = ctx;

  /** The signed URL's path for a job's log (the signature is a stand-in: nothing checks it). */
  const logPath = (jobId: number): string => `/fake/${fullName}/_apis/pipelines/1/jobs/${jobId}/signedlogcontent`;

  /** GET of a signed log URL: the log as text, 404 when it is gone; no token may reach this host (GitHub's signature is the credential). */
  function serveJobLog(path: string, headers: Record<string, unknown>): Reply {
    if (Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) violations.push(`GET ${LOGS_HOST}${path.split('?')[0]}: a token was sent to the log storage host`);
    const m = /\/jobs\/(\d+)\/signedlogcontent(?:\?|$)/.exec(path);
    const log = m && path.startsWith(logPath(Number(m[1]))) ? jobLogs.get(Number(m[1])) : undefined;
    if (log === undefined) return [404, '<Error><Code>BlobNotFound</Code></Error>', { 'content-type': 'application/xml' }];
    return [200, log, { 'content-type': 'text/plain; charset=utf-8' }];
  }

  function setWorkflowRun(run: FakeWorkflowRun): void {
    workflowRuns.set(run.id, { ...run });
  }

  /** A workflow's id: the number when one is given, a stable id for a file name. */
  function workflowIdOf(path: string): number {
    const file = path.split('/').pop() ?? path;
    return /^\d+$/.test(file) ? Number(file) : fakeId(`workflow:${fullName}:${file}`);
  }

  /** A run as GitHub's `workflow-run` schema has it. */
  function workflowRunJson(run: FakeWorkflowRun): Record<string, unknown> {
    const url = `${repoApi}/actions/runs/${run.id}`;
    const workflowId = workflowIdOf(run.path);
    const headSha = (run.head_branch !== null ? opts.resolveSha?.(run.head_branch) : undefined) ?? fakeSha(`run:${run.id}`);
    const suiteId = fakeId(`suite:run:${run.id}`);
    const t = '2024-01-01T00:00:00Z';
    return {
      id: run.id,
      name: run.path.split('/').pop() ?? run.path,
      node_id: `WFR_fake${run.id}`,
      check_suite_id: suiteId,
      check_suite_node_id: `CS_fake${suiteId}`,
      head_branch: run.head_branch,
      head_sha: headSha,
      path: run.path,
      run_number: run.id,
      run_attempt: 1,
      event: run.event,
      display_title: run.path,
      status: run.status,
      conclusion: run.conclusion,
      workflow_id: workflowId,
      url,
      html_url: `${repoHtml}/actions/runs/${run.id}`,
      pull_requests: pulls
        .filter((p) => p.state === 'open' && run.head_branch !== null && p.head === run.head_branch)
        .map((p) => ({
          id: p.id,
          number: p.number,
          url: `${repoApi}/pulls/${p.number}`,
          head: { ref: p.head, sha: p.headSha, repo: { id: repoId, url: repoApi, name: repo } },
          base: { ref: p.base, sha: fakeSha(`base:${p.base}`), repo: { id: repoId, url: repoApi, name: repo } },
        })),
      created_at: t,
      updated_at: t,
      run_started_at: t,
      actor: userJson(owner),
      triggering_actor: userJson(owner),
      jobs_url: `${url}/jobs`,
      logs_url: `${url}/logs`,
      check_suite_url: `${repoApi}/check-suites/${suiteId}`,
      artifacts_url: `${url}/artifacts`,
      cancel_url: `${url}/cancel`,
      rerun_url: `${url}/rerun`,
      previous_attempt_url: null,
      workflow_url: `${repoApi}/actions/workflows/${workflowId}`,
      head_commit: null,
      repository: minimalRepoJson(),
      head_repository: minimalRepoJson(),
    };
  }

  /** Validates a dispatch as GitHub does (422), records it, and tells the test. */
  function dispatch(workflowId: string, body: unknown): Reply {
    const b = obj(body);
    const ref = str(b.ref);
    if (ref === undefined || ref === '') return invalid('Invalid request.\n\n"ref" wasn\'t supplied.');
    if (opts.resolveSha && opts.resolveSha(ref.replace(/^refs\/(heads|tags)\//, '')) === undefined) return invalid(`No ref found for: ${ref}`);
    const raw = b.inputs ?? {};
    if (typeof raw !== 'object' || Array.isArray(raw)) return invalid("Invalid request.\n\nFor 'properties/inputs', it is not an object.");
    const entries = Object.entries(raw as Record<string, unknown>);
    if (entries.length > 25) return invalid(`Invalid request.\n\nFor 'properties/inputs', ${entries.length} is greater than the maximum of 25.`);
    const inputs = Object.fromEntries(entries.map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
    const d: FakeDispatch = { workflowId, ref, inputs };
    dispatches.push(d);
    opts.onDispatch?.({ ...d, inputs: { ...inputs } });
    if (b.return_run_details !== true) return noContent();
    const run: FakeWorkflowRun = {
      id: newId(),
      status: 'queued',
      conclusion: null,
      path: `.github/workflows/${workflowId}`,
      event: 'workflow_dispatch',
      head_branch: ref.replace(/^refs\/(heads|tags)\//, ''),
    };
    setWorkflowRun(run);
    return json(200, { workflow_run_id: run.id, run_url: `${repoApi}/actions/runs/${run.id}`, html_url: `${repoHtml}/actions/runs/${run.id}` });
  }

  function workflowJson(path: string, n: number): Record<string, unknown> {
    const id = 7000 + n;
    const name = path.replace(/^.*\//, '');
    return {
      id,
      node_id: `W_fake${id}`,
      name,
      path,
      state: 'active',
      created_at: '2024-01-01T00:00:00Z',
      updated_at: '2024-01-01T00:00:00Z',
      url: `${repoApi}/actions/workflows/${id}`,
      html_url: `${repoHtml}/blob/main/${path}`,
      badge_url: `${repoHtml}/workflows/${name}/badge.svg`,
    };
  }

  function routeActions(method: string, body: unknown, rest: string[], url?: URL): Reply | undefined {
    if (rest[0] !== 'actions') return undefined;
    if (method === 'GET' && rest[1] === 'runs' && rest.length === 3) {
      const run = workflowRuns.get(Number(rest[2]));
      return run ? json(200, workflowRunJson(run)) : notFound();
    }
    if (method === 'POST' && rest[1] === 'workflows' && rest[3] === 'dispatches' && rest.length === 4) return dispatch(rest[2] ?? '', body);
    // As GitHub: the workflows are the files under .github/workflows on the default branch.
    if (method === 'GET' && rest[1] === 'workflows' && rest.length === 2 && url) {
      const list = [...files.keys()].filter((p) => /^\.github\/workflows\/[^/]+\.ya?ml$/.test(p)).map((path, i) => workflowJson(path, i + 1));
      return paged(url, list, (items) => ({ total_count: list.length, workflows: items }));
    }
    if (method === 'GET' && rest[1] === 'jobs' && rest[3] === 'logs' && rest.length === 4) {
      const jobId = Number(rest[2]);
      if (!jobLogs.has(jobId)) return notFound();
      const expires = new Date(Date.now() + 60_000).toISOString();
      return [
        302,
        '',
        { ...baseHeaders(), 'content-type': 'text/html;charset=utf-8', location: `${LOGS_HOST}${logPath(jobId)}?urlExpires=${encodeURIComponent(expires)}&urlSigningMethod=HMACV1&urlSignature=fake` },
      ];
    }
    return undefined;
  }

  function setJobLog(jobId: number, text: string | undefined): void {
    if (text === undefined) jobLogs.delete(jobId);
    else jobLogs.set(jobId, text);
  }

  return { setWorkflowRun, setJobLog, serveJobLog, routeActions, workflowRunJson };
}
