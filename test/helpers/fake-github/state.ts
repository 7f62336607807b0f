import { fakeId } from '../webhook-payloads.js';
import {
  API,
  type FakeCheckRun,
  type FakeComment,
  type FakeDispatch,
  type FakeGitHubOptions,
  type FakeIssue,
  type FakeIssueSeed,
  type FakeLabel,
  type FakePull,
  type FakePullSeed,
  type FakeReaction,
  type FakeReview,
  type FakeReviewComment,
  type FakeStatus,
  type FakeWorkflowRun,
  type GraphQLCall,
  type Permission,
  type RecordedRequest,
  type ReviewState,
} from './types.js';
import { type Fault, fakeSha, now } from './util.js';

export function createState(opts: FakeGitHubOptions) {
  const { owner, repo, installationId } = opts;
  const defaultBranch = opts.defaultBranch ?? 'main';
  const appSlug = opts.appSlug ?? 'goal-loop';
  const appId = opts.appId ?? 1;
  const repoId = opts.repoId ?? 1296269;
  const botLogin = `${appSlug}[bot]`;
  const fullName = `${owner}/${repo}`;
  const repoApi = `${API}/repos/${fullName}`;
  const repoHtml = `https://github.com/${fullName}`;

  let nextId = 1000;
  const newId = (): number => ++nextId;

  const collaborators = new Map<string, Permission>(Object.entries(opts.collaborators ?? {}));
  const files = new Map<string, string>(Object.entries(opts.files ?? {}));
  const issues = new Map<number, FakeIssue>();
  const pulls: FakePull[] = [];
  const comments: FakeComment[] = [];
  const reactions: FakeReaction[] = [];
  const reviews: FakeReview[] = [];
  const reviewComments: FakeReviewComment[] = [];
  const checkRuns: FakeCheckRun[] = [];
  const repoLabels = new Map<string, FakeLabel>();
  const graphqlCalls: GraphQLCall[] = [];
  const tokens: string[] = [];
  const tokenExpiry = new Map<string, number>();
  const requests: RecordedRequest[] = [];
  const violations: string[] = [];
  const unhandled: string[] = [];
  const faults: Fault[] = [];
  const workflowRuns = new Map<number, FakeWorkflowRun>();
  const dispatches: FakeDispatch[] = [];
  const statuses: FakeStatus[] = [];
  /** Required checks by branch: through classic protection, through a ruleset. */
  const requiredChecks = new Map<string, { protection?: string[]; ruleset?: string[] }>();
  const jobLogs = new Map<number, string>();
  /** Who the request being answered writes as: the app's bot, or the user of a personal access token. */
  let currentWriter = botLogin;

  // ---------- state helpers ----------

  function ensureLabel(name: string, color = 'ededed', description: string | null = null): FakeLabel {
    const key = name.toLowerCase();
    let l = repoLabels.get(key);
    if (!l) {
      const id = newId();
      l = { id, nodeId: `LA_fake${id}`, name, color, description };
      repoLabels.set(key, l);
    }
    return l;
  }

  function addIssue(seed: FakeIssueSeed): FakeIssue {
    if (issues.has(seed.number)) throw new Error(`fakeGitHub: issue #${seed.number} already exists`);
    const id = fakeId(`issue:${fullName}#${seed.number}`);
    const t = now();
    for (const l of seed.labels ?? []) ensureLabel(l);
    const issue: FakeIssue = {
      number: seed.number,
      id,
      nodeId: `I_fake${id}`,
      title: seed.title,
      body: seed.body ?? null,
      user: seed.user,
      labels: [...(seed.labels ?? [])],
      assignees: [...(seed.assignees ?? [])],
      state: seed.state ?? 'open',
      stateReason: seed.state === 'closed' ? 'completed' : null,
      createdAt: t,
      updatedAt: t,
      closedAt: seed.state === 'closed' ? t : null,
    };
    issues.set(seed.number, issue);
    return issue;
  }

  function nextNumber(): number {
    return Math.max(0, ...issues.keys()) + 1;
  }

  function addPull(seed: FakePullSeed): FakePull {
    const number = seed.number ?? nextNumber();
    const issue = addIssue({
      number,
      title: seed.title,
      body: seed.body ?? null,
      user: seed.user ?? botLogin,
      labels: seed.labels ?? [],
      state: seed.state ?? (seed.merged ? 'closed' : 'open'),
    });
    const id = fakeId(`pull:${fullName}#${number}`);
    const headSha = seed.headSha ?? opts.resolveSha?.(seed.head) ?? fakeSha(`${seed.head}:${id}`);
    const pull: FakePull = {
      number,
      id,
      nodeId: `PR_fake${id}`,
      head: seed.head,
      headOwner: seed.headOwner ?? owner,
      headSha,
      base: seed.base ?? defaultBranch,
      draft: seed.draft ?? false,
      merged: seed.merged ?? false,
      mergedAt: seed.merged ? now() : null,
      issue,
      get title() {
        return issue.title;
      },
      set title(v: string) {
        issue.title = v;
      },
      get body() {
        return issue.body;
      },
      set body(v: string | null) {
        issue.body = v;
      },
      get state() {
        return issue.state;
      },
      set state(v: 'open' | 'closed') {
        issue.state = v;
        issue.closedAt = v === 'closed' ? (issue.closedAt ?? now()) : null;
      },
      get user() {
        return issue.user;
      },
    };
    issue.pull = pull;
    pulls.push(pull);
    return pull;
  }

  function addComment(issueNumber: number, body: string, user: string): FakeComment {
    if (!issues.has(issueNumber)) throw new Error(`fakeGitHub: no issue #${issueNumber}`);
    const id = newId();
    const t = now();
    const c: FakeComment = { id, nodeId: `IC_fake${id}`, issueNumber, body, user, createdAt: t, updatedAt: t, deleted: false, history: [body] };
    comments.push(c);
    return c;
  }

  function addReview(r: { pullNumber: number; state: ReviewState; body?: string | null; user: string; comments?: Array<{ body: string; path: string; line?: number }> }): {
    review: FakeReview;
    comments: FakeReviewComment[];
  } {
    const pull = pulls.find((p) => p.number === r.pullNumber);
    if (!pull) throw new Error(`fakeGitHub: no pull request #${r.pullNumber}`);
    const id = newId();
    const review: FakeReview = {
      id,
      nodeId: `PRR_fake${id}`,
      pullNumber: r.pullNumber,
      state: r.state,
      body: r.body ?? null,
      user: r.user,
      commitId: pull.headSha,
      submittedAt: now(),
    };
    reviews.push(review);
    const added = (r.comments ?? []).map((c) => addReviewComment(r.pullNumber, id, c.body, r.user, c.path, c.line ?? null, null));
    return { review, comments: added };
  }

  function addReviewComment(pullNumber: number, reviewId: number | null, body: string, user: string, path: string, line: number | null, inReplyToId: number | null): FakeReviewComment {
    const id = newId();
    const c: FakeReviewComment = { id, nodeId: `PRRC_fake${id}`, pullNumber, reviewId, body, user, path, line, inReplyToId, createdAt: now() };
    reviewComments.push(c);
    return c;
  }

  for (const name of opts.labels ?? []) ensureLabel(name);
  for (const seed of opts.issues ?? []) addIssue(seed);

  return {
    owner,
    repo,
    installationId,
    defaultBranch,
    appSlug,
    appId,
    repoId,
    botLogin,
    fullName,
    repoApi,
    repoHtml,
    newId,
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
    tokenExpiry,
    requests,
    violations,
    unhandled,
    faults,
    workflowRuns,
    dispatches,
    statuses,
    requiredChecks,
    jobLogs,
    /** A branch's head in the test's repository, when the test gave a resolver. */
    resolveSha: (ref: string): string | undefined => opts.resolveSha?.(ref),
    writer: (): string => currentWriter,
    setWriter: (login: string): void => {
      currentWriter = login;
    },
    ensureLabel,
    addIssue,
    nextNumber,
    addPull,
    addComment,
    addReview,
    addReviewComment,
  };
}

export type State = ReturnType<typeof createState>;
