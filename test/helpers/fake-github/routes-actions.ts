import { fakeId } from '../webhook-payloads.js';
import type { Ctx } from './responses.js';
import type { FakeDispatch, FakeGitHubOptions, FakeWorkflowRun } from './types.js';
import { fakeSha, obj, type Reply, str, userJson } from './util.js';

/** GitHub Actions: workflow runs (GET) and workflow dispatches (recorded, answered 204). */
export function createActionRoutes(opts: FakeGitHubOptions, ctx: Ctx) {
  const { owner, repo, fullName, repoApi, repoHtml, repoId, newId, pulls, workflowRuns, dispatches, json, notFound, invalid, noContent } = ctx;

  function setWorkflowRun(run: FakeWorkflowRun): void {
    workflowRuns.set(run.id, { ...run });
  }

  /** A workflow's id: the number when one is given, a stable id for a file name. */
  function workflowIdOf(path: string): number {
    const file = path.split('/').pop() ?? path;
    return /^\d+$/.test(file) ? Number(file) : fakeId(`workflow:${fullName}:${file}`);
  }

  /** The URLs and fields GitHub's `minimal-repository` requires. */
  function minimalRepoJson(): Record<string, unknown> {
    const u = repoApi;
    return {
      id: repoId,
      node_id: `R_fake${repoId}`,
      name: repo,
      full_name: fullName,
      owner: userJson(owner),
      private: false,
      html_url: repoHtml,
      description: null,
      fork: false,
      url: u,
      archive_url: `${u}/{archive_format}{/ref}`,
      assignees_url: `${u}/assignees{/user}`,
      blobs_url: `${u}/git/blobs{/sha}`,
      branches_url: `${u}/branches{/branch}`,
      collaborators_url: `${u}/collaborators{/collaborator}`,
      comments_url: `${u}/comments{/number}`,
      commits_url: `${u}/commits{/sha}`,
      compare_url: `${u}/compare/{base}...{head}`,
      contents_url: `${u}/contents/{+path}`,
      contributors_url: `${u}/contributors`,
      deployments_url: `${u}/deployments`,
      downloads_url: `${u}/downloads`,
      events_url: `${u}/events`,
      forks_url: `${u}/forks`,
      git_commits_url: `${u}/git/commits{/sha}`,
      git_refs_url: `${u}/git/refs{/sha}`,
      git_tags_url: `${u}/git/tags{/sha}`,
      hooks_url: `${u}/hooks`,
      issue_comment_url: `${u}/issues/comments{/number}`,
      issue_events_url: `${u}/issues/events{/number}`,
      issues_url: `${u}/issues{/number}`,
      keys_url: `${u}/keys{/key_id}`,
      labels_url: `${u}/labels{/name}`,
      languages_url: `${u}/languages`,
      merges_url: `${u}/merges`,
      milestones_url: `${u}/milestones{/number}`,
      notifications_url: `${u}/notifications{?since,all,participating}`,
      pulls_url: `${u}/pulls{/number}`,
      releases_url: `${u}/releases{/id}`,
      stargazers_url: `${u}/stargazers`,
      statuses_url: `${u}/statuses/{sha}`,
      subscribers_url: `${u}/subscribers`,
      subscription_url: `${u}/subscription`,
      tags_url: `${u}/tags`,
      teams_url: `${u}/teams`,
      trees_url: `${u}/git/trees{/sha}`,
    };
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

  function routeActions(method: string, body: unknown, rest: string[]): Reply | undefined {
    if (rest[0] !== 'actions') return undefined;
    if (method === 'GET' && rest[1] === 'runs' && rest.length === 3) {
      const run = workflowRuns.get(Number(rest[2]));
      return run ? json(200, workflowRunJson(run)) : notFound();
    }
    if (method === 'POST' && rest[1] === 'workflows' && rest[3] === 'dispatches' && rest.length === 4) return dispatch(rest[2] ?? '', body);
    return undefined;
  }

  return { setWorkflowRun, routeActions, workflowRunJson };
}
