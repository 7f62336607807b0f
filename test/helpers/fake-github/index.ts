import nock from 'nock';
import { checkRequest, matchOperation } from '../openapi-check.js';
import { type Caller, createAuth } from './auth.js';
import { createFaults } from './faults.js';
import { type Ctx, createResponses } from './responses.js';
import { createActionRoutes, LOGS_HOST } from './routes-actions.js';
import { createCheckRoutes } from './routes-checks.js';
import { createIssueRoutes } from './routes-issues.js';
import { createPullRoutes } from './routes-pulls.js';
import { createRepoRoutes } from './routes-repo.js';
import { createShapes } from './shapes.js';
import { createState } from './state.js';
import { API, type FakeGitHub, type FakeGitHubOptions, type FakeIssue, type FakePull, type RecordedRequest } from './types.js';
import { errorBody, graphqlOperation, graphqlQuery, METHODS, now, obj, parseBody, type Reply, str } from './util.js';

export { LOGS_HOST } from './routes-actions.js';
export { CI_APP } from './routes-checks.js';
export type {
  FakeAnnotationSeed,
  FakeApp,
  FakeCheckRun,
  FakeCheckRunSeed,
  FakeComment,
  FakeDispatch,
  FakeGitHub,
  FakeGitHubOptions,
  FakeIssue,
  FakeIssueSeed,
  FakeLabel,
  FakePull,
  FakePullSeed,
  FakeReaction,
  FakeReview,
  FakeReviewComment,
  FakeStatus,
  FakeWorkflowRun,
  FaultFilter,
  FaultKind,
  GraphQLCall,
  Permission,
  RecordedRequest,
  ReviewState,
  UserType,
  WorkflowRunStatus,
} from './types.js';
export { API } from './types.js';

/**
 * A stateful fake of the GitHub REST and GraphQL API at the network edge, built on nock.
 *
 * Every request to https://api.github.com is recorded, checked against GitHub's OpenAPI
 * description (problems land in `violations`), and answered from in-memory state (issues, comments,
 * labels, pull requests, reviews, check runs, reactions, repo files) so that tests can assert on what
 * the app did afterwards. Unknown routes answer 404 and are listed in `unhandled`. Local loopback
 * HTTP stays allowed; every other host is refused while the fake is active.
 */

export function fakeGitHub(opts: FakeGitHubOptions): FakeGitHub {
  const state = createState(opts);
  const shapes = createShapes(state);
  const responses = createResponses(state);
  const { faultReply, takeFault } = createFaults({ ...state, ...responses });
  const ctx: Ctx = { ...state, ...shapes, ...responses };
  const issueRoutes = createIssueRoutes(ctx);
  const { routeIssues } = issueRoutes;
  const { routePulls } = createPullRoutes({ ...ctx, ...issueRoutes });
  const { routeChecks, addCheckRun, completeCheckRun, addStatus } = createCheckRoutes(opts, ctx);
  const { routeApp, routeRepo } = createRepoRoutes(ctx);
  const { routeActions, setWorkflowRun, setJobLog, serveJobLog } = createActionRoutes(opts, ctx);
  const { callerOf, authViolations, writerOf, routeUser } = createAuth(opts, ctx);
  const {
    owner,
    repo,
    botLogin,
    collaborators,
    files,
    issues,
    pulls,
    comments,
    reactions,
    reviews,
    reviewComments,
    checkRuns,
    repoLabels,
    graphqlCalls,
    tokens,
    requests,
    violations,
    unhandled,
    faults,
    workflowRuns,
    dispatches,
    statuses,
    requiredChecks,
    setWriter,
    addIssue,
    addPull,
    addComment,
    addReview,
    json,
    notFound,
    invalid,
  } = ctx;

  // ---------- routing ----------

  function route(method: string, url: URL, body: unknown, headers: Record<string, string>, caller: Caller): Reply | undefined {
    const segs = url.pathname
      .split('/')
      .slice(1)
      .map((s) => {
        try {
          return decodeURIComponent(s);
        } catch {
          return s;
        }
      });
    const at = (i: number): string | undefined => segs[i];

    const app = routeApp(method, url, body, segs) ?? routeUser(method, url, caller);
    if (app) return app;

    if (at(0) !== 'repos') return undefined;
    if (at(1)?.toLowerCase() !== owner.toLowerCase() || at(2)?.toLowerCase() !== repo.toLowerCase()) {
      // Probot's context.config also looks in `{owner}/.github`: that repo does not exist here.
      if (method === 'GET' && at(2) === '.github' && segs.length >= 3) return notFound();
      return undefined;
    }
    const rest = segs.slice(3);

    // GitHub lets only an App write check runs: a personal access token is refused.
    if (caller.kind === 'user' && rest[0] === 'check-runs' && (method === 'POST' || method === 'PATCH')) {
      return json(403, { message: 'You must authenticate via a GitHub App.', documentation_url: 'https://docs.github.com/rest/checks/runs#create-a-check-run' });
    }
    return (
      routeRepo(method, url, body, headers, rest) ??
      routeIssues(method, url, body, rest) ??
      routePulls(method, url, body, rest) ??
      routeChecks(method, url, body, rest) ??
      routeActions(method, body, rest, url)
    );
  }

  // ---------- nock wiring ----------

  function handle(method: string, uri: string, rawBody: unknown, rawHeaders: Record<string, unknown>): Reply {
    const url = new URL(uri, API);
    const body = parseBody(rawBody);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(rawHeaders ?? {})) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
    const path = url.pathname + url.search;
    const isTokenExchange = method === 'POST' && /^\/app\/installations\/[^/]+\/access_tokens$/.test(url.pathname);

    const problems = checkRequest(method, path, body);
    violations.push(...problems);
    if (opts.strictAuth) violations.push(...authViolations(method, url.pathname, isTokenExchange, headers));
    const caller = callerOf(headers);
    setWriter(writerOf(caller));

    const rec: RecordedRequest = {
      method,
      path,
      pathname: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body,
      headers,
      template: matchOperation(method, path)?.template ?? (url.pathname === '/graphql' ? '/graphql' : undefined),
      status: 0,
      write: isWrite(method, url.pathname, body),
      at: Date.now(),
    };
    requests.push(rec);

    let performedThen502 = false;
    if (!isTokenExchange) {
      const fault = takeFault(method, path, rec.write);
      if (fault === 'performed-then-502') {
        rec.fault = fault;
        performedThen502 = true;
      } else if (fault !== undefined) {
        rec.fault = fault;
        const reply = faultReply(fault);
        rec.status = reply[0];
        return reply;
      }
    }

    const matched = rec.template !== undefined;
    if (matched && problems.length > 0) {
      // GitHub rejects a request that lacks required fields: so does the fake (after recording it).
      const reply = invalid(
        'Validation Failed',
        problems.map((message) => ({ code: 'invalid', message })),
      );
      rec.status = reply[0];
      return reply;
    }

    let reply: Reply | undefined;
    try {
      reply = route(method, url, body, headers, caller);
    } catch (err) {
      violations.push(`${method} ${path}: fake GitHub crashed: ${(err as Error).stack ?? String(err)}`);
      reply = json(500, errorBody('fake GitHub crashed', 500));
    }
    if (!reply) {
      unhandled.push(`${method} ${path}`);
      reply = notFound();
    }
    // Done, and the answer lost on the way back.
    if (performedThen502) reply = faultReply('performed-then-502');
    rec.status = reply[0];
    return reply;
  }

  // One fake at a time: interceptors left by an earlier fake (a test that never stopped it) go.
  nock.cleanAll();
  if (!nock.isActive()) nock.activate();
  nock.disableNetConnect();
  nock.enableNetConnect(/127\.0\.0\.1|localhost|\[::1\]/);
  const scope = nock(API).persist();
  for (const m of METHODS) {
    scope
      .intercept(() => true, m)
      .reply(function (uri, body) {
        // biome-ignore lint/nursery/noInvalidThis: nock calls a reply function with its interceptor context as `this`
        // biome-ignore lint/nursery/noThisOutsideOfClass: same: `this` is nock's reply context
        return handle(m, uri, body, this.req.headers) as unknown as nock.ReplyFnResult;
      });
  }

  // The signed URL a job's log download redirects to (fetch follows it, as it does from GitHub).
  nock(LOGS_HOST)
    .persist()
    .get(() => true)
    .reply(function (uri) {
      // biome-ignore lint/nursery/noInvalidThis: nock calls a reply function with its interceptor context as `this`
      // biome-ignore lint/nursery/noThisOutsideOfClass: same: `this` is nock's reply context
      return serveJobLog(uri, this.req.headers) as unknown as nock.ReplyFnResult;
    });

  /** A write as GitHub's guidance counts them: token exchanges are auth, a GraphQL query is a read. */
  function isWrite(method: string, pathname: string, body: unknown): boolean {
    if (/^\/app\/installations\/[^/]+\/access_tokens$/.test(pathname)) return false;
    if (pathname === '/graphql') return /^\s*mutation\b/.test(graphqlQuery(body));
    return method !== 'GET' && method !== 'HEAD';
  }

  /** Whether a write belongs to a goal: its issue and pulls by number or node id, its commits' check runs. */
  function writeOf(r: RecordedRequest, goal: { issue: number; pulls?: number[]; shas?: string[] }): boolean {
    const numbers = new Set([goal.issue, ...(goal.pulls ?? [])]);
    if (r.pathname === '/graphql') {
      const nodeIds = [...numbers].map((n) => issues.get(n)?.nodeId).concat((goal.pulls ?? []).map((n) => pulls.find((p) => p.number === n)?.nodeId));
      return Object.values(obj(obj(r.body).variables)).some((v) => nodeIds.includes(String(v)));
    }
    const segs = r.pathname.split('/').slice(4);
    if (segs[0] === 'check-runs') {
      const sha = segs[1] ? checkRuns.find((c) => String(c.id) === segs[1])?.headSha : str(obj(r.body).head_sha);
      return sha !== undefined && (goal.shas ?? []).includes(sha);
    }
    if (segs[0] === 'issues' && segs[1] === 'comments') return numbers.has(comments.find((c) => String(c.id) === segs[2])?.issueNumber ?? -1);
    if (segs[0] === 'pulls' && segs[1] === undefined) return pulls.some((p) => p.head === str(obj(r.body).head) && numbers.has(p.number));
    return (segs[0] === 'issues' || segs[0] === 'pulls') && numbers.has(Number(segs[1]));
  }

  function issue(n: number): FakeIssue {
    const i = issues.get(n);
    if (!i) throw new Error(`fakeGitHub: no issue #${n}`);
    return i;
  }

  function pull(n: number): FakePull {
    const p = pulls.find((x) => x.number === n);
    if (!p) throw new Error(`fakeGitHub: no pull request #${n}`);
    return p;
  }

  return {
    options: opts,
    botLogin,
    requests,
    violations,
    unhandled,
    issues,
    pulls,
    comments,
    reactions,
    reviews,
    reviewComments,
    checkRuns,
    repoLabels,
    graphql: graphqlCalls,
    tokens,
    files,
    workflowRuns,
    dispatches,
    statuses,
    issue,
    pull,
    labels: (n) => [...issue(n).labels],
    commentsOn: (n) => comments.filter((c) => c.issueNumber === n && !c.deleted),
    writes: () => requests.filter((r) => r.write),
    writesFor: (goal) => requests.filter((r) => r.write && writeOf(r, goal)),
    writesByKind() {
      const kinds: Record<string, number> = {};
      for (const r of requests.filter((q) => q.write)) {
        const kind = r.pathname === '/graphql' ? `mutation ${graphqlOperation(r.body)}` : `${r.method} ${r.template ?? r.pathname}`;
        kinds[kind] = (kinds[kind] ?? 0) + 1;
      }
      return kinds;
    },
    calls: (method, path) => requests.filter((q) => q.method === method.toUpperCase() && (path === undefined || (typeof path === 'string' ? q.pathname === path : path.test(q.path)))),
    addIssue,
    addComment,
    addPull,
    addReview,
    setPermission: (login, permission) => void collaborators.set(login, permission),
    setFile: (path, content) => void (content === undefined ? files.delete(path) : files.set(path, content)),
    setWorkflowRun,
    addCheckRun,
    completeCheckRun,
    addStatus,
    setRequiredChecks(branch, names, via = 'protection') {
      const req = { ...requiredChecks.get(branch) };
      if (names === null) delete req[via];
      else req[via] = [...names];
      if (req.protection === undefined && req.ruleset === undefined) requiredChecks.delete(branch);
      else requiredChecks.set(branch, req);
    },
    setJobLog,
    mergePull(n) {
      const p = pull(n);
      p.merged = true;
      p.mergedAt = now();
      p.state = 'closed';
      return p;
    },
    failNext(count, kind, filter) {
      faults.push({ remaining: count, kind, filter });
    },
    pendingFaults: () => faults.reduce((s, f) => s + f.remaining, 0),
    stop() {
      nock.cleanAll();
      nock.enableNetConnect();
    },
  };
}
