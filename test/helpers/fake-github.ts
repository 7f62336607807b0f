import { createHash } from 'node:crypto';
import nock from 'nock';
import { checkRequest, matchOperation } from './openapi-check.js';
import { fakeId, fakeUserId } from './webhook-payloads.js';

/**
 * A stateful fake of the GitHub REST and GraphQL API at the network edge, built on nock.
 *
 * Every request to https://api.github.com is recorded, checked against GitHub's OpenAPI
 * description (problems land in `violations`), and answered from in-memory state (issues, comments,
 * labels, pull requests, reviews, check runs, reactions, repo files) so that tests can assert on what
 * the app did afterwards. Unknown routes answer 404 and are listed in `unhandled`. Local loopback
 * HTTP stays allowed; every other host is refused while the fake is active.
 */

export const API = 'https://api.github.com';

export type Permission = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';
export type FaultKind = 502 | 'secondary-rate-limit' | 'rate-limit';
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
  history: Array<Record<string, unknown>>;
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
}

export interface FaultFilter {
  method?: string;
  path?: RegExp;
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

  issue(n: number): FakeIssue;
  pull(n: number): FakePull;
  /** Labels on an issue or PR. */
  labels(n: number): string[];
  /** The live (not deleted) comments of an issue or PR, oldest first. */
  commentsOn(n: number): FakeComment[];
  /** Requests whose method matches and whose path (with query) matches the pattern. */
  calls(method: string, path?: RegExp | string): RecordedRequest[];

  addIssue(seed: FakeIssueSeed): FakeIssue;
  /** A comment written by someone (a human, by default), e.g. before delivering issue_comment.created. */
  addComment(issueNumber: number, body: string, user: string): FakeComment;
  addPull(seed: FakePullSeed): FakePull;
  /** A submitted review, with optional line comments attached to it. */
  addReview(r: {
    pullNumber: number;
    state: ReviewState;
    body?: string | null;
    user: string;
    comments?: Array<{ body: string; path: string; line?: number }>;
  }): { review: FakeReview; comments: FakeReviewComment[] };
  setPermission(login: string, permission: Permission): void;
  setFile(path: string, content: string | undefined): void;
  /** Marks a PR merged (and closed), as a human merge would. */
  mergePull(n: number): FakePull;

  /**
   * The next `count` requests other than the token exchange (and matching `filter`, when given)
   * fail with `kind`: 502, a secondary rate limit (403, retry-after: 1), or a primary rate limit
   * (403, x-ratelimit-remaining: 0, reset a second ahead).
   */
  failNext(count: number, kind: FaultKind, filter?: FaultFilter): void;
  /** Injected faults not yet used. */
  pendingFaults(): number;
  /** Removes the interceptors and restores the network policy. */
  stop(): void;
}

type Reply = [number, string | Buffer | Record<string, unknown> | unknown[]] | [number, string | Buffer | Record<string, unknown> | unknown[], Record<string, string>] | [number];

interface Fault {
  remaining: number;
  kind: FaultKind;
  filter: FaultFilter | undefined;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;
const REACTIONS = new Set(['+1', '-1', 'laugh', 'confused', 'heart', 'hooray', 'rocket', 'eyes']);

function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function fakeSha(s: string): string {
  return createHash('sha1').update(s).digest('hex');
}

function userType(login: string): UserType {
  return login.endsWith('[bot]') ? 'Bot' : 'User';
}

function userJson(login: string): Record<string, unknown> {
  const id = fakeUserId(login);
  const type = userType(login);
  return {
    login,
    id,
    node_id: `${type === 'Bot' ? 'BOT' : 'U'}_fake${id}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    gravatar_id: '',
    url: `${API}/users/${encodeURIComponent(login)}`,
    html_url: type === 'Bot' ? `https://github.com/apps/${login.replace(/\[bot\]$/, '')}` : `https://github.com/${login}`,
    type,
    site_admin: false,
  };
}

function errorBody(message: string, status: number): Record<string, unknown> {
  return { message, documentation_url: 'https://docs.github.com/rest', status: String(status) };
}

function parseBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  if (body === '') return undefined;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

function obj(body: unknown): Record<string, unknown> {
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

const ROLE: Record<Permission, { permission: string; role: string; perms: Record<string, boolean> }> = {
  admin: { permission: 'admin', role: 'admin', perms: { admin: true, maintain: true, push: true, triage: true, pull: true } },
  maintain: { permission: 'write', role: 'maintain', perms: { admin: false, maintain: true, push: true, triage: true, pull: true } },
  write: { permission: 'write', role: 'write', perms: { admin: false, maintain: false, push: true, triage: true, pull: true } },
  triage: { permission: 'read', role: 'triage', perms: { admin: false, maintain: false, push: false, triage: true, pull: true } },
  read: { permission: 'read', role: 'read', perms: { admin: false, maintain: false, push: false, triage: false, pull: true } },
  none: { permission: 'none', role: 'none', perms: { admin: false, maintain: false, push: false, triage: false, pull: false } },
};

export function fakeGitHub(opts: FakeGitHubOptions): FakeGitHub {
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
  let tokenSeq = 0;

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

  function addReview(r: {
    pullNumber: number;
    state: ReviewState;
    body?: string | null;
    user: string;
    comments?: Array<{ body: string; path: string; line?: number }>;
  }): { review: FakeReview; comments: FakeReviewComment[] } {
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

  function addReviewComment(
    pullNumber: number,
    reviewId: number | null,
    body: string,
    user: string,
    path: string,
    line: number | null,
    inReplyToId: number | null,
  ): FakeReviewComment {
    const id = newId();
    const c: FakeReviewComment = { id, nodeId: `PRRC_fake${id}`, pullNumber, reviewId, body, user, path, line, inReplyToId, createdAt: now() };
    reviewComments.push(c);
    return c;
  }

  for (const seed of opts.issues ?? []) addIssue(seed);

  // ---------- JSON shapes ----------

  function labelJson(name: string): Record<string, unknown> {
    const l = ensureLabel(name);
    return {
      id: l.id,
      node_id: l.nodeId,
      url: `${repoApi}/labels/${encodeURIComponent(l.name)}`,
      name: l.name,
      color: l.color,
      default: false,
      description: l.description,
    };
  }

  function repoJson(): Record<string, unknown> {
    return {
      id: repoId,
      node_id: `R_fake${repoId}`,
      name: repo,
      full_name: fullName,
      private: false,
      owner: userJson(owner),
      html_url: repoHtml,
      url: repoApi,
      clone_url: `${repoHtml}.git`,
      git_url: `git://github.com/${fullName}.git`,
      ssh_url: `git@github.com:${fullName}.git`,
      default_branch: defaultBranch,
      fork: false,
      archived: false,
      disabled: false,
      visibility: 'public',
      permissions: { admin: false, maintain: false, push: true, triage: true, pull: true },
    };
  }

  function issueJson(i: FakeIssue): Record<string, unknown> {
    const base = `${repoApi}/issues/${i.number}`;
    return {
      id: i.id,
      node_id: i.nodeId,
      url: base,
      repository_url: repoApi,
      labels_url: `${base}/labels{/name}`,
      comments_url: `${base}/comments`,
      events_url: `${base}/events`,
      html_url: `${repoHtml}/${i.pull ? 'pull' : 'issues'}/${i.number}`,
      number: i.number,
      title: i.title,
      body: i.body,
      user: userJson(i.user),
      labels: i.labels.map(labelJson),
      state: i.state,
      state_reason: i.stateReason,
      locked: false,
      assignee: i.assignees[0] ? userJson(i.assignees[0]) : null,
      assignees: i.assignees.map(userJson),
      milestone: null,
      comments: comments.filter((c) => c.issueNumber === i.number && !c.deleted).length,
      created_at: i.createdAt,
      updated_at: i.updatedAt,
      closed_at: i.closedAt,
      author_association: i.user === owner ? 'OWNER' : collaborators.has(i.user) ? 'COLLABORATOR' : 'NONE',
      ...(i.pull
        ? {
            pull_request: {
              url: `${repoApi}/pulls/${i.number}`,
              html_url: `${repoHtml}/pull/${i.number}`,
              diff_url: `${repoHtml}/pull/${i.number}.diff`,
              patch_url: `${repoHtml}/pull/${i.number}.patch`,
              merged_at: i.pull.mergedAt,
            },
          }
        : {}),
    };
  }

  function commentJson(c: FakeComment): Record<string, unknown> {
    return {
      id: c.id,
      node_id: c.nodeId,
      url: `${repoApi}/issues/comments/${c.id}`,
      html_url: `${repoHtml}/issues/${c.issueNumber}#issuecomment-${c.id}`,
      issue_url: `${repoApi}/issues/${c.issueNumber}`,
      body: c.body,
      user: userJson(c.user),
      created_at: c.createdAt,
      updated_at: c.updatedAt,
      author_association: c.user === owner ? 'OWNER' : collaborators.has(c.user) ? 'COLLABORATOR' : 'NONE',
      performed_via_github_app: null,
    };
  }

  function branchJson(ref: string, sha: string): Record<string, unknown> {
    return { label: `${owner}:${ref}`, ref, sha, user: userJson(owner), repo: repoJson() };
  }

  function pullJson(p: FakePull): Record<string, unknown> {
    const base = `${repoApi}/pulls/${p.number}`;
    return {
      id: p.id,
      node_id: p.nodeId,
      url: base,
      html_url: `${repoHtml}/pull/${p.number}`,
      diff_url: `${repoHtml}/pull/${p.number}.diff`,
      patch_url: `${repoHtml}/pull/${p.number}.patch`,
      issue_url: `${repoApi}/issues/${p.number}`,
      commits_url: `${base}/commits`,
      review_comments_url: `${base}/comments`,
      comments_url: `${repoApi}/issues/${p.number}/comments`,
      statuses_url: `${repoApi}/statuses/${p.headSha}`,
      number: p.number,
      state: p.state,
      locked: false,
      title: p.title,
      body: p.body,
      user: userJson(p.user),
      labels: p.issue.labels.map(labelJson),
      assignee: p.issue.assignees[0] ? userJson(p.issue.assignees[0]) : null,
      assignees: p.issue.assignees.map(userJson),
      requested_reviewers: [],
      requested_teams: [],
      milestone: null,
      draft: p.draft,
      head: branchJson(p.head, p.headSha),
      base: branchJson(p.base, fakeSha(`base:${p.base}`)),
      merged: p.merged,
      merged_at: p.mergedAt,
      merge_commit_sha: p.merged ? fakeSha(`merge:${p.number}`) : null,
      mergeable: p.state === 'open' ? true : null,
      mergeable_state: p.state === 'open' ? 'clean' : 'unknown',
      merged_by: p.merged ? userJson(owner) : null,
      created_at: p.issue.createdAt,
      updated_at: p.issue.updatedAt,
      closed_at: p.issue.closedAt,
      author_association: 'NONE',
      auto_merge: null,
      active_lock_reason: null,
      _links: {
        self: { href: base },
        html: { href: `${repoHtml}/pull/${p.number}` },
        issue: { href: `${repoApi}/issues/${p.number}` },
      },
    };
  }

  function reviewJson(r: FakeReview): Record<string, unknown> {
    return {
      id: r.id,
      node_id: r.nodeId,
      user: userJson(r.user),
      body: r.body ?? '',
      state: r.state,
      html_url: `${repoHtml}/pull/${r.pullNumber}#pullrequestreview-${r.id}`,
      pull_request_url: `${repoApi}/pulls/${r.pullNumber}`,
      submitted_at: r.submittedAt,
      commit_id: r.commitId,
      author_association: collaborators.has(r.user) ? 'COLLABORATOR' : 'NONE',
      _links: {
        html: { href: `${repoHtml}/pull/${r.pullNumber}#pullrequestreview-${r.id}` },
        pull_request: { href: `${repoApi}/pulls/${r.pullNumber}` },
      },
    };
  }

  function reviewCommentJson(c: FakeReviewComment): Record<string, unknown> {
    const pull = pulls.find((p) => p.number === c.pullNumber);
    return {
      id: c.id,
      node_id: c.nodeId,
      url: `${repoApi}/pulls/comments/${c.id}`,
      html_url: `${repoHtml}/pull/${c.pullNumber}#discussion_r${c.id}`,
      pull_request_url: `${repoApi}/pulls/${c.pullNumber}`,
      pull_request_review_id: c.reviewId,
      diff_hunk: '@@ -1 +1 @@',
      path: c.path,
      line: c.line,
      original_line: c.line,
      side: 'RIGHT',
      position: c.line,
      original_position: c.line,
      commit_id: pull?.headSha ?? '',
      original_commit_id: pull?.headSha ?? '',
      in_reply_to_id: c.inReplyToId ?? undefined,
      user: userJson(c.user),
      body: c.body,
      created_at: c.createdAt,
      updated_at: c.createdAt,
      author_association: collaborators.has(c.user) ? 'COLLABORATOR' : 'NONE',
      _links: {
        self: { href: `${repoApi}/pulls/comments/${c.id}` },
        html: { href: `${repoHtml}/pull/${c.pullNumber}#discussion_r${c.id}` },
        pull_request: { href: `${repoApi}/pulls/${c.pullNumber}` },
      },
    };
  }

  function checkRunJson(c: FakeCheckRun): Record<string, unknown> {
    return {
      id: c.id,
      node_id: c.nodeId,
      name: c.name,
      head_sha: c.headSha,
      external_id: c.externalId,
      url: `${repoApi}/check-runs/${c.id}`,
      html_url: `${repoHtml}/runs/${c.id}`,
      details_url: c.detailsUrl,
      status: c.status,
      conclusion: c.conclusion,
      started_at: c.startedAt,
      completed_at: c.completedAt,
      output: {
        title: c.output?.title ?? null,
        summary: c.output?.summary ?? null,
        text: c.output?.text ?? null,
        annotations_count: 0,
        annotations_url: `${repoApi}/check-runs/${c.id}/annotations`,
      },
      check_suite: { id: fakeId(`suite:${c.headSha}`) },
      app: appJson(),
      pull_requests: pulls
        .filter((p) => p.headSha === c.headSha)
        .map((p) => ({ id: p.id, number: p.number, url: `${repoApi}/pulls/${p.number}`, head: { ref: p.head, sha: p.headSha }, base: { ref: p.base, sha: fakeSha(`base:${p.base}`) } })),
    };
  }

  function appJson(): Record<string, unknown> {
    return {
      id: appId,
      slug: appSlug,
      node_id: `A_fake${appId}`,
      name: appSlug,
      owner: userJson(owner),
      description: 'fake app',
      external_url: 'https://example.test',
      html_url: `https://github.com/apps/${appSlug}`,
      created_at: '2024-01-01T00:00:00Z',
      updated_at: '2024-01-01T00:00:00Z',
      permissions: { contents: 'write', issues: 'write', pull_requests: 'write', checks: 'write', metadata: 'read' },
      events: ['issues', 'issue_comment', 'pull_request', 'pull_request_review', 'installation'],
    };
  }

  function installationJson(): Record<string, unknown> {
    return {
      id: installationId,
      account: userJson(owner),
      app_id: appId,
      app_slug: appSlug,
      target_id: fakeUserId(owner),
      target_type: 'User',
      repository_selection: 'all',
      access_tokens_url: `${API}/app/installations/${installationId}/access_tokens`,
      repositories_url: `${API}/installation/repositories`,
      html_url: `https://github.com/settings/installations/${installationId}`,
      permissions: { contents: 'write', issues: 'write', pull_requests: 'write', checks: 'write', metadata: 'read' },
      events: ['issues', 'issue_comment', 'pull_request', 'pull_request_review'],
      created_at: '2024-01-01T00:00:00Z',
      updated_at: '2024-01-01T00:00:00Z',
      single_file_name: null,
      suspended_at: null,
      suspended_by: null,
    };
  }

  // ---------- responses ----------

  const baseHeaders = (): Record<string, string> => ({
    'content-type': 'application/json; charset=utf-8',
    'x-github-media-type': 'github.v3; format=json',
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': '4999',
    'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 3600),
    'x-ratelimit-used': '1',
    'x-ratelimit-resource': 'core',
    'x-github-request-id': `FAKE:${requests.length}`,
  });

  const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => [
    status,
    JSON.stringify(body),
    { ...baseHeaders(), ...headers },
  ];
  const notFound = (message = 'Not Found'): Reply => json(404, errorBody(message, 404));
  const invalid = (message: string, errors: unknown[] = []): Reply => json(422, { ...errorBody(message, 422), errors });
  const noContent = (): Reply => [204, '', { ...baseHeaders(), 'content-type': 'text/plain' }];

  /** Pages a list with per_page/page and a Link header, as GitHub does. */
  function paged(url: URL, all: unknown[], wrap?: (items: unknown[]) => unknown): Reply {
    const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30) || 30));
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const items = all.slice((page - 1) * perPage, page * perPage);
    const link = (p: number, rel: string): string => {
      const u = new URL(url.pathname + url.search, API);
      u.searchParams.set('per_page', String(perPage));
      u.searchParams.set('page', String(p));
      return `<${u.toString()}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (page > 1) links.push(link(page - 1, 'prev'));
    if (page < last) links.push(link(page + 1, 'next'), link(last, 'last'));
    if (page > 1) links.push(link(1, 'first'));
    return json(200, wrap ? wrap(items) : items, links.length ? { link: links.join(', ') } : {});
  }

  function touch(i: FakeIssue): void {
    i.updatedAt = now();
  }

  function faultReply(kind: FaultKind): Reply {
    if (kind === 502) return [502, JSON.stringify({ message: 'Server Error' }), { 'content-type': 'application/json; charset=utf-8' }];
    if (kind === 'secondary-rate-limit') {
      return json(
        403,
        {
          message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
          documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
          status: '403',
        },
        { 'retry-after': '1' },
      );
    }
    const reset = Math.ceil(Date.now() / 1000) + 1;
    return json(
      403,
      {
        message: `API rate limit exceeded for installation ID ${installationId}.`,
        documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api',
        status: '403',
      },
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-used': '5000', 'x-ratelimit-reset': String(reset) },
    );
  }

  function takeFault(method: string, path: string): FaultKind | undefined {
    for (const f of faults) {
      if (f.remaining <= 0) continue;
      if (f.filter?.method && f.filter.method.toUpperCase() !== method) continue;
      if (f.filter?.path && !f.filter.path.test(path)) continue;
      f.remaining--;
      return f.kind;
    }
    return undefined;
  }

  // ---------- routing ----------

  function findIssue(n: string | undefined): FakeIssue | undefined {
    return issues.get(Number(n));
  }

  function findPull(n: string | undefined): FakePull | undefined {
    return pulls.find((p) => p.number === Number(n));
  }

  function labelNames(body: unknown): string[] | undefined {
    const raw = Array.isArray(body) ? body : obj(body).labels;
    if (!Array.isArray(raw)) return undefined;
    return raw.map((l) => (typeof l === 'string' ? l : str(obj(l).name) ?? '')).filter((l) => l !== '');
  }

  function addLabelsTo(i: FakeIssue, names: string[]): void {
    for (const n of names) {
      ensureLabel(n);
      if (!i.labels.some((l) => l.toLowerCase() === n.toLowerCase())) i.labels.push(n);
    }
    touch(i);
  }

  function react(subject: FakeReaction['subject'], subjectId: number, body: unknown): Reply {
    const content = str(obj(body).content) ?? '';
    if (!REACTIONS.has(content)) return invalid('Validation Failed', [{ resource: 'Reaction', field: 'content', code: 'invalid' }]);
    const existing = reactions.find((r) => r.subject === subject && r.subjectId === subjectId && r.content === content && r.user === botLogin);
    const r = existing ?? { id: newId(), subject, subjectId, content, user: botLogin };
    if (!existing) reactions.push(r);
    return json(existing ? 200 : 201, { id: r.id, node_id: `REA_fake${r.id}`, user: userJson(r.user), content: r.content, created_at: now() });
  }

  function route(method: string, url: URL, body: unknown, headers: Record<string, string>): Reply | undefined {
    const segs = url.pathname.split('/').slice(1).map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
    const at = (i: number): string | undefined => segs[i];

    // --- app and installation ---
    if (method === 'POST' && at(0) === 'app' && at(1) === 'installations' && at(3) === 'access_tokens' && segs.length === 4) {
      if (Number(at(2)) !== installationId) return notFound();
      const token = `ghs_fake${installationId}x${++tokenSeq}${'0'.repeat(20)}`.slice(0, 40);
      const expires = Date.now() + 3600_000;
      tokens.push(token);
      tokenExpiry.set(token, expires);
      return json(201, {
        token,
        expires_at: new Date(expires).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        permissions: { contents: 'write', issues: 'write', pull_requests: 'write', checks: 'write', metadata: 'read' },
        repository_selection: 'all',
      });
    }
    if (method === 'GET' && url.pathname === '/app') return json(200, appJson());
    if (method === 'GET' && at(0) === 'app' && at(1) === 'installations' && segs.length === 3) {
      return Number(at(2)) === installationId ? json(200, installationJson()) : notFound();
    }
    if (method === 'GET' && url.pathname === '/app/installations') return json(200, [installationJson()]);
    if (method === 'GET' && url.pathname === '/installation/repositories') {
      return json(200, { total_count: 1, repository_selection: 'all', repositories: [repoJson()] });
    }
    if (method === 'POST' && url.pathname === '/graphql') return graphql(body);

    if (at(0) !== 'repos') return undefined;
    if (at(1)?.toLowerCase() !== owner.toLowerCase() || at(2)?.toLowerCase() !== repo.toLowerCase()) {
      // Probot's context.config also looks in `{owner}/.github`: that repo does not exist here.
      if (method === 'GET' && at(2) === '.github' && segs.length >= 3) return notFound();
      return undefined;
    }
    const rest = segs.slice(3);
    const r = (i: number): string | undefined => rest[i];

    // --- repository ---
    if (rest.length === 0 && method === 'GET') return json(200, repoJson());
    if (method === 'GET' && rest.length === 1 && r(0) === 'installation') return json(200, installationJson());

    // --- contents ---
    if (method === 'GET' && r(0) === 'contents' && rest.length >= 2) {
      const path = rest.slice(1).join('/');
      const content = files.get(path);
      if (content === undefined) return notFound();
      const accept = headers['accept'] ?? '';
      if (/\.raw\b|\braw\b/.test(accept)) {
        return [200, content, { ...baseHeaders(), 'content-type': 'application/vnd.github.raw; charset=utf-8' }];
      }
      const sha = fakeSha(`blob ${content}`);
      return json(200, {
        type: 'file',
        encoding: 'base64',
        size: Buffer.byteLength(content),
        name: path.split('/').pop(),
        path,
        content: Buffer.from(content).toString('base64'),
        sha,
        url: `${repoApi}/contents/${path}`,
        git_url: `${repoApi}/git/blobs/${sha}`,
        html_url: `${repoHtml}/blob/${defaultBranch}/${path}`,
        download_url: `https://raw.githubusercontent.com/${fullName}/${defaultBranch}/${path}`,
        _links: { self: `${repoApi}/contents/${path}`, git: `${repoApi}/git/blobs/${sha}`, html: `${repoHtml}/blob/${defaultBranch}/${path}` },
      });
    }

    // --- collaborators ---
    if (method === 'GET' && r(0) === 'collaborators' && r(2) === 'permission' && rest.length === 3) {
      const login = r(1) ?? '';
      const perm = collaborators.get(login) ?? 'none';
      const role = ROLE[perm];
      return json(200, {
        permission: role.permission,
        role_name: role.role,
        user: { ...userJson(login), permissions: role.perms, role_name: role.role },
      });
    }

    // --- repo labels ---
    if (r(0) === 'labels') {
      if (method === 'GET' && rest.length === 1) return paged(url, [...repoLabels.values()].map((l) => labelJson(l.name)));
      if (method === 'POST' && rest.length === 1) {
        const b = obj(body);
        const name = str(b.name) ?? '';
        if (repoLabels.has(name.toLowerCase())) return invalid('Validation Failed', [{ resource: 'Label', code: 'already_exists', field: 'name' }]);
        ensureLabel(name, str(b.color) ?? 'ededed', str(b.description) ?? null);
        return json(201, labelJson(name));
      }
      const l = repoLabels.get((r(1) ?? '').toLowerCase());
      if (rest.length === 2 && method === 'GET') return l ? json(200, labelJson(l.name)) : notFound();
      if (rest.length === 2 && method === 'PATCH') {
        if (!l) return notFound();
        const b = obj(body);
        if (str(b.color)) l.color = str(b.color) ?? l.color;
        if ('description' in b) l.description = str(b.description) ?? null;
        return json(200, labelJson(l.name));
      }
      if (rest.length === 2 && method === 'DELETE') {
        if (!l) return notFound();
        repoLabels.delete(l.name.toLowerCase());
        for (const i of issues.values()) i.labels = i.labels.filter((x) => x.toLowerCase() !== l.name.toLowerCase());
        return noContent();
      }
    }

    // --- issue comments of the whole repo ---
    if (method === 'GET' && r(0) === 'issues' && r(1) === 'comments' && rest.length === 2) {
      return paged(url, comments.filter((c) => !c.deleted).map(commentJson));
    }

    // --- issue comments by id ---
    if (r(0) === 'issues' && r(1) === 'comments' && rest.length >= 3) {
      const c = comments.find((x) => x.id === Number(r(2)) && !x.deleted);
      if (rest.length === 3) {
        if (!c) return notFound();
        if (method === 'GET') return json(200, commentJson(c));
        if (method === 'PATCH') {
          const text = str(obj(body).body);
          if (text === undefined) return invalid('Invalid request.\n\n"body" wasn\'t supplied.');
          c.body = text;
          c.history.push(text);
          c.updatedAt = now();
          return json(200, commentJson(c));
        }
        if (method === 'DELETE') {
          c.deleted = true;
          return noContent();
        }
      }
      if (rest.length === 4 && r(3) === 'reactions') {
        if (!c) return notFound();
        if (method === 'POST') return react('issue_comment', c.id, body);
        if (method === 'GET') {
          const content = url.searchParams.get('content');
          return paged(
            url,
            reactions
              .filter((x) => !content || x.content === content)
              .filter((x) => x.subject === 'issue_comment' && x.subjectId === c.id)
              .map((x) => ({ id: x.id, node_id: `REA_fake${x.id}`, user: userJson(x.user), content: x.content, created_at: now() })),
          );
        }
      }
      if (rest.length === 5 && r(3) === 'reactions' && method === 'DELETE') {
        const i = reactions.findIndex((x) => x.subject === 'issue_comment' && x.subjectId === c?.id && x.id === Number(r(4)));
        if (!c || i < 0) return notFound();
        reactions.splice(i, 1);
        return noContent();
      }
      return undefined;
    }

    // --- issues ---
    if (r(0) === 'issues' && rest.length === 1) {
      if (method === 'GET') {
        const state = url.searchParams.get('state') ?? 'open';
        const want = (url.searchParams.get('labels') ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
        const list = [...issues.values()]
          .filter((i) => state === 'all' || i.state === state)
          .filter((i) => want.every((w) => i.labels.some((l) => l.toLowerCase() === w)))
          .sort((a, b) => b.number - a.number)
          .map(issueJson);
        return paged(url, list);
      }
      if (method === 'POST') {
        const b = obj(body);
        const i = addIssue({
          number: nextNumber(),
          title: str(b.title) ?? '',
          body: str(b.body) ?? null,
          user: botLogin,
          labels: labelNames(b) ?? [],
          assignees: Array.isArray(b.assignees) ? (b.assignees as unknown[]).filter((x): x is string => typeof x === 'string') : [],
        });
        return json(201, issueJson(i));
      }
    }
    if (r(0) === 'issues' && rest.length >= 2 && /^\d+$/.test(r(1) ?? '')) {
      const i = findIssue(r(1));
      if (!i) return notFound();
      if (rest.length === 2) {
        if (method === 'GET') return json(200, issueJson(i));
        if (method === 'PATCH') {
          const b = obj(body);
          if (typeof b.title === 'string') i.title = b.title;
          if ('body' in b) i.body = str(b.body) ?? null;
          if (b.state === 'open' || b.state === 'closed') {
            i.state = b.state;
            i.closedAt = b.state === 'closed' ? now() : null;
            i.stateReason = b.state === 'closed' ? (str(b.state_reason) ?? 'completed') : 'reopened';
          }
          const names = labelNames(b);
          if (names) {
            i.labels = [];
            addLabelsTo(i, names);
          }
          if (Array.isArray(b.assignees)) i.assignees = (b.assignees as unknown[]).filter((x): x is string => typeof x === 'string');
          touch(i);
          return json(200, issueJson(i));
        }
      }
      const sub = r(2);
      if (sub === 'comments' && rest.length === 3) {
        if (method === 'GET') {
          return paged(url, comments.filter((c) => c.issueNumber === i.number && !c.deleted).map(commentJson));
        }
        if (method === 'POST') {
          const text = str(obj(body).body);
          if (text === undefined) return invalid('Invalid request.\n\n"body" wasn\'t supplied.');
          const c = addComment(i.number, text, botLogin);
          touch(i);
          return json(201, commentJson(c), { location: `${repoApi}/issues/comments/${c.id}` });
        }
      }
      if (sub === 'labels') {
        if (rest.length === 3) {
          if (method === 'GET') return paged(url, i.labels.map(labelJson));
          if (method === 'POST' || method === 'PUT') {
            const names = labelNames(body);
            if (!names) return invalid('Invalid request.\n\n"labels" wasn\'t supplied.');
            if (method === 'PUT') i.labels = [];
            addLabelsTo(i, names);
            return json(200, i.labels.map(labelJson));
          }
          if (method === 'DELETE') {
            i.labels = [];
            touch(i);
            return noContent();
          }
        }
        if (rest.length === 4 && method === 'DELETE') {
          const name = (r(3) ?? '').toLowerCase();
          if (!i.labels.some((l) => l.toLowerCase() === name)) return notFound('Label does not exist');
          i.labels = i.labels.filter((l) => l.toLowerCase() !== name);
          touch(i);
          return json(200, i.labels.map(labelJson));
        }
      }
      if (sub === 'assignees' && rest.length === 3) {
        const who = Array.isArray(obj(body).assignees) ? (obj(body).assignees as unknown[]).filter((x): x is string => typeof x === 'string') : [];
        if (method === 'POST') i.assignees = [...new Set([...i.assignees, ...who])];
        else if (method === 'DELETE') i.assignees = i.assignees.filter((a) => !who.includes(a));
        else return undefined;
        touch(i);
        return json(201, issueJson(i));
      }
      if (sub === 'reactions' && rest.length === 3 && method === 'POST') return react('issue', i.number, body);
      return undefined;
    }

    // --- pull requests ---
    if (r(0) === 'pulls' && rest.length === 1) {
      if (method === 'GET') {
        const state = url.searchParams.get('state') ?? 'open';
        const head = url.searchParams.get('head');
        const baseRef = url.searchParams.get('base');
        const list = pulls
          .filter((p) => state === 'all' || p.state === state)
          .filter((p) => {
            if (!head) return true;
            const [who, ref] = head.includes(':') ? [head.slice(0, head.indexOf(':')), head.slice(head.indexOf(':') + 1)] : [head, undefined];
            // GitHub ignores a head filter without a branch only when it names the owner.
            return who.toLowerCase() === owner.toLowerCase() && (ref === undefined || ref === p.head);
          })
          .filter((p) => !baseRef || p.base === baseRef)
          .sort((a, b) => b.number - a.number)
          .map(pullJson);
        return paged(url, list);
      }
      if (method === 'POST') {
        const b = obj(body);
        const headRaw = str(b.head) ?? '';
        const head = headRaw.includes(':') ? headRaw.slice(headRaw.indexOf(':') + 1) : headRaw;
        const baseRef = str(b.base) ?? defaultBranch;
        if (!head) return invalid('Validation Failed', [{ resource: 'PullRequest', field: 'head', code: 'missing_field' }]);
        if (!str(b.title) && b.issue === undefined) {
          return invalid('Validation Failed', [{ resource: 'PullRequest', field: 'title', code: 'missing_field' }]);
        }
        if (head === baseRef) return invalid('Validation Failed', [{ resource: 'PullRequest', code: 'custom', message: `No commits between ${baseRef} and ${head}` }]);
        if (pulls.some((p) => p.state === 'open' && p.head === head && p.base === baseRef)) {
          return invalid('Validation Failed', [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${owner}:${head}.` }]);
        }
        const p = addPull({ title: str(b.title) ?? '', body: str(b.body) ?? null, head, base: baseRef, draft: b.draft === true });
        return json(201, pullJson(p));
      }
    }
    if (r(0) === 'pulls' && rest.length >= 2 && /^\d+$/.test(r(1) ?? '')) {
      const p = findPull(r(1));
      if (!p) return notFound();
      if (rest.length === 2) {
        if (method === 'GET') return json(200, pullJson(p));
        if (method === 'PATCH') {
          const b = obj(body);
          if (typeof b.title === 'string') p.title = b.title;
          if ('body' in b) p.body = str(b.body) ?? null;
          if (typeof b.base === 'string') p.base = b.base;
          if (b.state === 'open' || b.state === 'closed') p.state = b.state;
          touch(p.issue);
          return json(200, pullJson(p));
        }
      }
      if (r(2) === 'reviews') {
        const list = reviews.filter((x) => x.pullNumber === p.number);
        if (rest.length === 3 && method === 'GET') return paged(url, list.map(reviewJson));
        if (rest.length === 3 && method === 'POST') {
          const b = obj(body);
          const event = str(b.event);
          const state: ReviewState =
            event === 'APPROVE' ? 'APPROVED' : event === 'REQUEST_CHANGES' ? 'CHANGES_REQUESTED' : event === 'COMMENT' ? 'COMMENTED' : 'PENDING';
          const added = addReview({
            pullNumber: p.number,
            state,
            body: str(b.body) ?? null,
            user: botLogin,
            comments: Array.isArray(b.comments)
              ? (b.comments as unknown[]).map((c) => ({ body: str(obj(c).body) ?? '', path: str(obj(c).path) ?? '', line: Number(obj(c).line) || undefined }))
              : [],
          });
          return json(200, reviewJson(added.review));
        }
        const review = list.find((x) => x.id === Number(r(3)));
        if (rest.length === 4 && method === 'GET') return review ? json(200, reviewJson(review)) : notFound();
        if (rest.length === 5 && r(4) === 'comments' && method === 'GET') {
          if (!review) return notFound();
          return paged(url, reviewComments.filter((c) => c.reviewId === review.id).map(reviewCommentJson));
        }
        return undefined;
      }
      if (r(2) === 'comments') {
        if (rest.length === 3 && method === 'GET') {
          return paged(url, reviewComments.filter((c) => c.pullNumber === p.number).map(reviewCommentJson));
        }
        if (rest.length === 5 && r(4) === 'replies' && method === 'POST') {
          const parent = reviewComments.find((c) => c.id === Number(r(3)) && c.pullNumber === p.number);
          if (!parent) return notFound();
          const text = str(obj(body).body);
          if (text === undefined) return invalid('Invalid request.\n\n"body" wasn\'t supplied.');
          const c = addReviewComment(p.number, null, text, botLogin, parent.path, parent.line, parent.inReplyToId ?? parent.id);
          return json(201, reviewCommentJson(c));
        }
      }
      return undefined;
    }
    if (r(0) === 'pulls' && r(1) === 'comments' && rest.length === 4 && r(3) === 'reactions' && method === 'POST') {
      const c = reviewComments.find((x) => x.id === Number(r(2)));
      return c ? react('review_comment', c.id, body) : notFound();
    }

    // --- check runs ---
    if (r(0) === 'check-runs') {
      if (rest.length === 1 && method === 'POST') {
        const b = obj(body);
        const name = str(b.name);
        const headSha = str(b.head_sha);
        if (!name || !headSha) return invalid('Invalid request.\n\n"name" and "head_sha" are required.');
        const id = newId();
        const c: FakeCheckRun = {
          id,
          nodeId: `CR_fake${id}`,
          name,
          headSha,
          status: 'queued',
          conclusion: null,
          output: null,
          detailsUrl: null,
          externalId: null,
          startedAt: now(),
          completedAt: null,
          history: [],
        };
        applyCheckRun(c, b);
        checkRuns.push(c);
        return json(201, checkRunJson(c));
      }
      const c = checkRuns.find((x) => x.id === Number(r(1)));
      if (rest.length === 2) {
        if (!c) return notFound();
        if (method === 'GET') return json(200, checkRunJson(c));
        if (method === 'PATCH') {
          applyCheckRun(c, obj(body));
          return json(200, checkRunJson(c));
        }
      }
      return undefined;
    }
    if (r(0) === 'commits' && rest.length === 3 && r(2) === 'check-runs' && method === 'GET') {
      const ref = r(1) ?? '';
      const shas = new Set([ref, ...pulls.filter((p) => p.head === ref).map((p) => p.headSha)]);
      const name = url.searchParams.get('check_name');
      const list = checkRuns.filter((c) => shas.has(c.headSha) && (!name || c.name === name)).reverse();
      return paged(url, list.map(checkRunJson), (items) => ({ total_count: list.length, check_runs: items }));
    }

    return undefined;
  }

  function applyCheckRun(c: FakeCheckRun, b: Record<string, unknown>): void {
    c.history.push(b);
    if (typeof b.name === 'string') c.name = b.name;
    if (typeof b.status === 'string') c.status = b.status;
    if (typeof b.conclusion === 'string') {
      c.conclusion = b.conclusion;
      c.status = 'completed';
    }
    if (c.status === 'completed' && !c.completedAt) c.completedAt = str(b.completed_at) ?? now();
    if (typeof b.started_at === 'string') c.startedAt = b.started_at;
    if (typeof b.details_url === 'string') c.detailsUrl = b.details_url;
    if (typeof b.external_id === 'string') c.externalId = b.external_id;
    if (b.output && typeof b.output === 'object') c.output = { ...(c.output ?? {}), ...(b.output as Record<string, unknown>) };
  }

  function graphql(body: unknown): Reply {
    const b = obj(body);
    const query = str(b.query) ?? '';
    const variables = obj(b.variables);
    graphqlCalls.push({ query, variables });
    if (/\bmarkPullRequestReadyForReview\b/.test(query)) {
      const literal = /pullRequestId\s*:\s*"([^"]+)"/.exec(query)?.[1];
      const candidates = [literal, ...Object.values(variables).flatMap((v) => (typeof v === 'string' ? [v] : Object.values(obj(v))))];
      const p = pulls.find((x) => candidates.includes(x.nodeId));
      if (!p) {
        return json(200, {
          data: { markPullRequestReadyForReview: null },
          errors: [{ type: 'NOT_FOUND', path: ['markPullRequestReadyForReview'], message: `Could not resolve to a node with the global id of '${String(candidates.find(Boolean) ?? '')}'.` }],
        });
      }
      p.draft = false;
      touch(p.issue);
      return json(200, {
        data: {
          markPullRequestReadyForReview: {
            clientMutationId: str(obj(variables.input).clientMutationId) ?? null,
            pullRequest: { id: p.nodeId, number: p.number, isDraft: false, url: `${repoHtml}/pull/${p.number}` },
          },
        },
      });
    }
    return json(200, { errors: [{ message: `fakeGitHub: unsupported GraphQL operation: ${query.slice(0, 120)}` }] });
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
    if (opts.strictAuth) {
      const auth = headers['authorization'] ?? '';
      if (isTokenExchange || url.pathname === '/app' || url.pathname.startsWith('/app/')) {
        if (!/^bearer\s+\S+\.\S+\.\S+$/i.test(auth)) violations.push(`${method} ${url.pathname}: expected an app JWT (Bearer), got "${auth.slice(0, 12)}…"`);
      } else {
        const token = auth.replace(/^(token|bearer)\s+/i, '');
        const exp = tokenExpiry.get(token);
        if (exp === undefined) violations.push(`${method} ${url.pathname}: not authenticated with an installation token from the fake`);
        else if (exp < Date.now()) violations.push(`${method} ${url.pathname}: installation token expired`);
      }
    }

    const rec: RecordedRequest = {
      method,
      path,
      pathname: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body,
      headers,
      template: matchOperation(method, path)?.template ?? (url.pathname === '/graphql' ? '/graphql' : undefined),
      status: 0,
    };
    requests.push(rec);

    if (!isTokenExchange) {
      const fault = takeFault(method, path);
      if (fault !== undefined) {
        rec.fault = fault;
        const reply = faultReply(fault);
        rec.status = reply[0];
        return reply;
      }
    }

    const matched = rec.template !== undefined;
    if (matched && problems.length > 0) {
      // GitHub rejects a request that lacks required fields: so does the fake (after recording it).
      const reply = invalid('Validation Failed', problems.map((message) => ({ code: 'invalid', message })));
      rec.status = reply[0];
      return reply;
    }

    let reply: Reply | undefined;
    try {
      reply = route(method, url, body, headers);
    } catch (err) {
      violations.push(`${method} ${path}: fake GitHub crashed: ${(err as Error).stack ?? String(err)}`);
      reply = json(500, errorBody('fake GitHub crashed', 500));
    }
    if (!reply) {
      unhandled.push(`${method} ${path}`);
      reply = notFound();
    }
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
    scope.intercept(() => true, m).reply(function (uri, body) {
      return handle(m, uri, body, this.req.headers) as unknown as nock.ReplyFnResult;
    });
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
    issue,
    pull,
    labels: (n) => [...issue(n).labels],
    commentsOn: (n) => comments.filter((c) => c.issueNumber === n && !c.deleted),
    calls: (method, path) =>
      requests.filter(
        (q) =>
          q.method === method.toUpperCase() &&
          (path === undefined || (typeof path === 'string' ? q.pathname === path : path.test(q.path))),
      ),
    addIssue,
    addComment,
    addPull,
    addReview,
    setPermission: (login, permission) => void collaborators.set(login, permission),
    setFile: (path, content) => void (content === undefined ? files.delete(path) : files.set(path, content)),
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
