export const API = 'https://api.github.com';

export type Permission = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';
/**
 * `performed-then-502`: GitHub performs the request (a create creates), then answers 502, as a
 * proxy timing out does: a client that re-sends the POST creates a duplicate.
 */
export type FaultKind = 502 | 'performed-then-502' | 'secondary-rate-limit' | 'rate-limit' | 403 | 404 | 410;
export type UserType = 'User' | 'Bot';

export interface FakeIssueSeed {
  number: number;
  title: string;
  body?: string | null;
  /** The author's login; a login ending in `[bot]` is a Bot. */
  user: string;
  labels?: string[];
  assignees?: string[];
  state?: 'open' | 'closed';
}

export interface FakePullSeed {
  /** Defaults to the next free issue/PR number. */
  number?: number;
  title: string;
  body?: string | null;
  /** Head branch name (without `owner:`). */
  head: string;
  /** The owner of the head's repository: another owner than the repository's is a fork. Default: the repository's owner. */
  headOwner?: string;
  headSha?: string;
  base?: string;
  draft?: boolean;
  /** Defaults to the app's bot user. */
  user?: string;
  state?: 'open' | 'closed';
  merged?: boolean;
  labels?: string[];
}

export interface FakeGitHubOptions {
  owner: string;
  repo: string;
  installationId: number;
  collaborators?: Record<string, Permission>;
  issues?: FakeIssueSeed[];
  /** The repository's labels at the start (an issue's labels are added to them too). */
  labels?: string[];
  /** Repo contents served by GET /repos/{o}/{r}/contents/{path} (404 when absent). */
  files?: Record<string, string>;
  defaultBranch?: string;
  /** The app's slug; its comments, PRs and check runs are authored by `<slug>[bot]`. Default `goal-loop`. */
  appSlug?: string;
  appId?: number;
  /** The repository id used in payloads and responses. Default 1296269 (GitHub's Hello-World). */
  repoId?: number;
  /** Resolves a branch name to a commit SHA for new PRs (e.g. from the test's bare repo). */
  resolveSha?: (ref: string) => string | undefined;
  /**
   * When true, every request other than the token exchange must carry an installation token this
   * fake issued, and the token exchange must carry a `Bearer` JWT; otherwise it is a violation.
   */
  strictAuth?: boolean;
  /**
   * A static token the fake accepts besides the installation tokens it issues, as `token <t>` or
   * `Bearer <t>`: a workflow's `GITHUB_TOKEN` (`ghs_…`). What it writes is by the app's bot (set
   * `appSlug: 'github-actions'`, `appId: 15368` for GitHub Actions' own app), and GET /user answers
   * 403 as for any integration token. It never expires.
   */
  workflowToken?: string;
  /**
   * With `workflowToken`: that token is a personal access token of this login. GET /user answers
   * this user (type User), what the token writes is by this user, and check runs are refused (403),
   * as GitHub refuses them to anything but an App.
   */
  tokenUser?: string;
  /** Called with each workflow dispatch the fake accepts, once it is recorded (a test may start the run it asks for). */
  onDispatch?: (d: FakeDispatch) => void;
}

export type WorkflowRunStatus = 'queued' | 'in_progress' | 'completed';

/** A workflow run, as GET /repos/{o}/{r}/actions/runs/{run_id} serves it. */
export interface FakeWorkflowRun {
  id: number;
  status: WorkflowRunStatus;
  /** `success`, `failure`, `cancelled`, …; null until the run is completed. */
  conclusion: string | null;
  /** The workflow file, e.g. `.github/workflows/goal-loop.yml`. */
  path: string;
  /** The event that started it, e.g. `issues` or `workflow_dispatch`. */
  event: string;
  head_branch: string | null;
}

/** A recorded POST /repos/{o}/{r}/actions/workflows/{workflow_id}/dispatches. */
export interface FakeDispatch {
  /** As sent in the path: a file name (`goal-loop.yml`) or a number. */
  workflowId: string;
  ref: string;
  /** Values sent as numbers or booleans are kept as their string form (a workflow reads inputs as strings). */
  inputs: Record<string, string>;
}

export interface FakeIssue {
  number: number;
  id: number;
  nodeId: string;
  title: string;
  body: string | null;
  user: string;
  labels: string[];
  assignees: string[];
  state: 'open' | 'closed';
  stateReason: string | null;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  /** Set when this number is a pull request. */
  pull?: FakePull;
}

export interface FakePull {
  number: number;
  id: number;
  nodeId: string;
  /** Head branch name. */
  head: string;
  /** The owner of the head's repository (a fork when it is not the repository's owner). */
  headOwner: string;
  headSha: string;
  base: string;
  draft: boolean;
  merged: boolean;
  mergedAt: string | null;
  /** The issue record of the same number: labels, assignees and comments live there. */
  readonly issue: FakeIssue;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  readonly user: string;
}

export interface FakeComment {
  id: number;
  nodeId: string;
  issueNumber: number;
  body: string;
  user: string;
  createdAt: string;
  updatedAt: string;
  deleted: boolean;
  /** Every body the comment had, oldest first (edits append). */
  history: string[];
}

export interface FakeReaction {
  id: number;
  /** What was reacted to. */
  subject: 'issue' | 'issue_comment' | 'review_comment';
  /** Issue number for `issue`, comment id otherwise. */
  subjectId: number;
  content: string;
  user: string;
}

export type ReviewState = 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED' | 'PENDING';

export interface FakeReview {
  id: number;
  nodeId: string;
  pullNumber: number;
  state: ReviewState;
  body: string | null;
  user: string;
  commitId: string;
  submittedAt: string;
}

export interface FakeReviewComment {
  id: number;
  nodeId: string;
  pullNumber: number;
  reviewId: number | null;
  body: string;
  user: string;
  path: string;
  line: number | null;
  inReplyToId: number | null;
  createdAt: string;
}

export interface FakeCheckRun {
  id: number;
  nodeId: string;
  name: string;
  headSha: string;
  status: string;
  conclusion: string | null;
  output: { title?: string; summary?: string; text?: string; [k: string]: unknown } | null;
  detailsUrl: string | null;
  externalId: string | null;
  startedAt: string | null;
  completedAt: string | null;
  /** Every create/update body, in order. */
  history: Record<string, unknown>[];
  /** Annotations as GitHub keeps them: each request's are appended to those already there. */
  annotations: Record<string, unknown>[];
  /** The App that made it when it is not this fake's App (another app's CI: see `addCheckRun`). */
  app?: FakeApp;
  /** Its check suite came from a fork's pull request (same commit): GitHub gives such a suite no head branch. */
  fromFork?: boolean;
}

/** Another GitHub App, as a check run names it. */
export interface FakeApp {
  id: number;
  slug: string;
}

/** An annotation as a check run's app writes it (GitHub's request format). */
export interface FakeAnnotationSeed {
  path: string;
  start_line: number;
  end_line: number;
  annotation_level: 'notice' | 'warning' | 'failure';
  message: string;
  title?: string;
  raw_details?: string;
}

export interface FakeCheckRunSeed {
  headSha: string;
  name: string;
  /** Default: a CI app of its own (id 9001, `ci-app`); `{ id: 15368, slug: 'github-actions' }` for a workflow job. */
  app?: FakeApp;
  /** Default `completed` when a conclusion is given, `queued` otherwise. */
  status?: 'queued' | 'in_progress' | 'completed';
  conclusion?: string;
  output?: { title?: string; summary?: string; text?: string };
  annotations?: FakeAnnotationSeed[];
  detailsUrl?: string;
  /** A run of a fork's pull request whose head is the same commit (its suite has no head branch). */
  fromFork?: boolean;
}

/** A commit status (POST /repos/{o}/{r}/statuses/{sha}); the combined status shows each context's latest. */
export interface FakeStatus {
  id: number;
  nodeId: string;
  sha: string;
  context: string;
  state: 'error' | 'failure' | 'pending' | 'success';
  description: string | null;
  targetUrl: string | null;
  createdAt: string;
}

export interface FakeLabel {
  id: number;
  nodeId: string;
  name: string;
  color: string;
  description: string | null;
}

export interface RecordedRequest {
  method: string;
  /** Path with query, as sent (URL-encoded). */
  path: string;
  /** Path without query, URL-encoded. */
  pathname: string;
  query: Record<string, string>;
  /** Parsed JSON body, or the raw string, or undefined when there was none. */
  body: unknown;
  headers: Record<string, string>;
  /** The OpenAPI path template the request matched, if any. */
  template: string | undefined;
  /** The status the fake answered with. */
  status: number;
  /** Set when the answer was an injected fault. */
  fault?: FaultKind;
  /** A write as GitHub's guidance counts them: any request but a read, GraphQL mutations included, token exchanges not. */
  write: boolean;
  /** When the fake received it (epoch ms): load tests count writes in sliding windows from it. */
  at: number;
}

export interface FaultFilter {
  method?: string;
  path?: RegExp;
  /** Only requests that count as writes (`RecordedRequest.write`): not a GraphQL query, which is also a POST. */
  write?: boolean;
}

export interface GraphQLCall {
  query: string;
  variables: Record<string, unknown>;
}

export interface FakeGitHub {
  readonly options: Readonly<FakeGitHubOptions>;
  /** `<appSlug>[bot]` */
  readonly botLogin: string;
  readonly requests: RecordedRequest[];
  readonly violations: string[];
  readonly unhandled: string[];
  readonly issues: Map<number, FakeIssue>;
  readonly pulls: FakePull[];
  /** All issue comments, deleted ones included (with `deleted: true`). */
  readonly comments: FakeComment[];
  readonly reactions: FakeReaction[];
  readonly reviews: FakeReview[];
  readonly reviewComments: FakeReviewComment[];
  readonly checkRuns: FakeCheckRun[];
  readonly repoLabels: Map<string, FakeLabel>;
  readonly graphql: GraphQLCall[];
  /** Installation tokens handed out, in order. */
  readonly tokens: string[];
  readonly files: Map<string, string>;
  /** Workflow runs by id (see `setWorkflowRun`; a dispatch with `return_run_details` adds one too). */
  readonly workflowRuns: Map<number, FakeWorkflowRun>;
  /** Workflow dispatches accepted, in order. */
  readonly dispatches: FakeDispatch[];
  /** Commit statuses, oldest first (every one set, not only each context's latest). */
  readonly statuses: FakeStatus[];

  issue(n: number): FakeIssue;
  pull(n: number): FakePull;
  /** Labels on an issue or PR. */
  labels(n: number): string[];
  /** The live (not deleted) comments of an issue or PR, oldest first. */
  commentsOn(n: number): FakeComment[];
  /** Requests whose method matches and whose path (with query) matches the pattern. */
  calls(method: string, path?: RegExp | string): RecordedRequest[];
  /** The writes (see `RecordedRequest.write`) made so far, in order. */
  writes(): RecordedRequest[];
  /**
   * The writes of one goal: on its issue and pull requests (their labels, comments and edits), the
   * GraphQL mutations naming one of them, and the check runs on the given commits.
   */
  writesFor(goal: { issue: number; pulls?: number[]; shas?: string[] }): RecordedRequest[];
  /** The writes by kind: `POST /repos/{owner}/{repo}/check-runs` (the OpenAPI template), or `mutation markPullRequestReadyForReview`. */
  writesByKind(): Record<string, number>;

  addIssue(seed: FakeIssueSeed): FakeIssue;
  /** A comment written by someone (a human, by default), e.g. before delivering issue_comment.created. */
  addComment(issueNumber: number, body: string, user: string): FakeComment;
  addPull(seed: FakePullSeed): FakePull;
  /** A submitted review, with optional line comments attached to it. */
  addReview(r: { pullNumber: number; state: ReviewState; body?: string | null; user: string; comments?: Array<{ body: string; path: string; line?: number }> }): {
    review: FakeReview;
    comments: FakeReviewComment[];
  };
  setPermission(login: string, permission: Permission): void;
  setFile(path: string, content: string | undefined): void;
  /** Adds or replaces a workflow run (by id). */
  setWorkflowRun(run: FakeWorkflowRun): void;
  /**
   * A check run made by another App (the repository's CI), stored with the fake's own: listed for
   * its commit, its annotations served. Returns the stored run (its `id` is the run's, and the
   * job's id when the app is `github-actions`).
   */
  addCheckRun(seed: FakeCheckRunSeed): FakeCheckRun;
  /** Completes a check run (any app's) with `conclusion`; `output` is merged into what it had, its annotations appended. */
  completeCheckRun(id: number, conclusion: string, output?: { title?: string; summary?: string; text?: string; annotations?: FakeAnnotationSeed[] }): FakeCheckRun;
  /** Sets a commit status, as another service does; a later one of the same context supersedes it in the combined status. */
  addStatus(s: { sha: string; context: string; state: FakeStatus['state']; description?: string; targetUrl?: string }): FakeStatus;
  /**
   * The checks a branch requires: through classic branch protection (GET branches/{branch}) or a
   * ruleset (GET rules/branches/{branch}). `null` removes that source's requirement (and the
   * protection); `[]` protects the branch without required checks.
   */
  setRequiredChecks(branch: string, names: string[] | null, via?: 'protection' | 'ruleset'): void;
  /**
   * The log of an Actions job, served through GitHub's redirect to a short-lived URL;
   * `undefined` removes it (GET answers 404, as for a job whose logs are gone).
   */
  setJobLog(jobId: number, text: string | undefined): void;
  /** Marks a PR merged (and closed), as a human merge would. */
  mergePull(n: number): FakePull;

  /**
   * The next `count` requests other than the token exchange (and matching `filter`, when given)
   * fail with `kind`: 502, a 502 after performing the request (`performed-then-502`), a secondary
   * rate limit (403, retry-after: 1), a primary rate limit (403, x-ratelimit-remaining: 0,
   * reset a second ahead), or a plain 403 (a permission the installation lacks), 404 or 410 (gone).
   */
  failNext(count: number, kind: FaultKind, filter?: FaultFilter): void;
  /** Injected faults not yet used. */
  pendingFaults(): number;
  /** Removes the interceptors and restores the network policy. */
  stop(): void;
}
