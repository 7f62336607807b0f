import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Context, Probot } from 'probot';

/**
 * Webhook payloads for the app tests, built from GitHub's REAL examples in `@octokit/webhooks-examples`:
 * each builder deep-clones an example and adjusts it (repository, installation, issue, comment, PR,
 * review, sender), never writes one from scratch. Plus the signing helpers for HTTP deliveries.
 */

// ---------- examples ----------

interface ExampleDefinition {
  name: string;
  actions: string[];
  examples: unknown[];
}

// biome-ignore lint/suspicious/noExplicitAny: GitHub's example payloads are edited field by field to build each fixture
type J = Record<string, any>;

let definitions: ExampleDefinition[] | undefined;

function allExamples(): ExampleDefinition[] {
  definitions ??= createRequire(import.meta.url)('@octokit/webhooks-examples') as ExampleDefinition[];
  return definitions;
}

/**
 * A deep clone of the first example of `event` with `action` for which `prefer` holds (or of the
 * first example with that action when none does). Throws when the package has no such example.
 */
export function exampleOf(event: string, action: string, prefer?: (e: J) => boolean): J {
  const def = allExamples().find((d) => d.name === event);
  const candidates = (def?.examples ?? []).filter((e): e is J => (e as J | null)?.action === action);
  const chosen = (prefer && candidates.find(prefer)) ?? candidates[0];
  if (!chosen) throw new Error(`@octokit/webhooks-examples has no ${event}.${action} example`);
  return structuredClone(chosen);
}

/** Prefer examples of a user-owned repo (no `organization`) that carry an `installation`. */
const plain = (e: J): boolean => !e.organization && Boolean(e.installation);
const noOrg = (e: J): boolean => !e.organization;

// ---------- specs ----------

/** A login (a login ending in `[bot]` is a Bot) or an explicit login and type. */
export type Actor = string | { login: string; type?: 'User' | 'Bot' };

export interface RepoSpec {
  owner: string;
  repo: string;
  installationId: number;
  /** `repository.clone_url`; tests pass a local bare repo path. Default `https://github.com/{owner}/{repo}.git`. */
  cloneUrl?: string;
  defaultBranch?: string;
  /** Default: the example's repository id. */
  repoId?: number;
  /** The human or bot that caused the event. Default: the repo owner. */
  sender?: Actor;
}

export interface IssueSpec {
  number: number;
  title?: string;
  body?: string | null;
  labels?: string[];
  /** Author. Default: the repo owner. */
  user?: Actor;
  assignees?: string[];
  state?: 'open' | 'closed';
  /** The issue is a pull request (issue_comment on a PR). */
  isPullRequest?: boolean;
}

export interface CommentSpec {
  id?: number;
  body: string;
  /** Author. Default: the sender. */
  user?: Actor;
}

export interface PullSpec {
  number: number;
  title?: string;
  body?: string | null;
  /** Head branch name. */
  head: string;
  /** The head's repository is a fork owned by this login (as GitHub sends a fork's PR: `head.repo` is the fork). */
  headOwner?: string;
  headSha?: string;
  base?: string;
  /** Author. Default: `goal-loop[bot]`. */
  user?: Actor;
  draft?: boolean;
  labels?: string[];
}

export interface ReviewSpec {
  id?: number;
  state: 'approved' | 'changes_requested' | 'commented';
  body?: string | null;
  /** Reviewer. Default: the sender. */
  user?: Actor;
  commitId?: string;
}

export type IssuesLabeledPayload = Context<'issues.labeled'>['payload'];
export type IssuesUnlabeledPayload = Context<'issues.unlabeled'>['payload'];
export type IssuesClosedPayload = Context<'issues.closed'>['payload'];
export type IssueCommentCreatedPayload = Context<'issue_comment.created'>['payload'];
export type IssueCommentEditedPayload = Context<'issue_comment.edited'>['payload'];
export type IssueCommentDeletedPayload = Context<'issue_comment.deleted'>['payload'];
export type PullRequestClosedPayload = Context<'pull_request.closed'>['payload'];
export type PullRequestReviewSubmittedPayload = Context<'pull_request_review.submitted'>['payload'];
export type PushPayload = Context<'push'>['payload'];
export type InstallationCreatedPayload = Context<'installation.created'>['payload'];
export type CheckRunCompletedPayload = Context<'check_run.completed'>['payload'];
export type StatusPayload = Context<'status'>['payload'];

/** What `probot.receive` takes. */
export type ProbotEvent = Parameters<Probot['receive']>[0];
export type WebhookEventName = ProbotEvent['name'];

// ---------- users and ids ----------

/** A stable numeric id for a key, shared by the payload builders and the fake API so that they agree. */
export function fakeId(key: string): number {
  return (createHash('sha1').update(key).digest().readUInt32BE(0) % 90_000_000) + 10_000_000;
}

/** The numeric id the fakes give a login. */
export function fakeUserId(login: string): number {
  return fakeId(`user:${login}`);
}

function actorOf(a: Actor): { login: string; type: 'User' | 'Bot' } {
  if (typeof a === 'string') return { login: a, type: a.endsWith('[bot]') ? 'Bot' : 'User' };
  return { login: a.login, type: a.type ?? (a.login.endsWith('[bot]') ? 'Bot' : 'User') };
}

function isUser(v: unknown): v is J {
  return Boolean(v) && typeof v === 'object' && typeof (v as J).login === 'string' && typeof (v as J).type === 'string' && 'site_admin' in (v as J);
}

/** Turns a user object of the example into `actor`, rewriting its URLs. */
function setUser(u: J, actor: Actor): J {
  const { login, type } = actorOf(actor);
  const old = String(u.login);
  const id = fakeUserId(login);
  for (const [k, v] of Object.entries(u)) {
    if (typeof v === 'string' && (k === 'url' || k.endsWith('_url'))) {
      u[k] = v
        .split(`/users/${old}`)
        .join(`/users/${encodeURIComponent(login)}`)
        .split(`github.com/${old}`)
        .join(`github.com/${login}`);
    }
  }
  u.login = login;
  u.id = id;
  u.node_id = `${type === 'Bot' ? 'BOT' : 'U'}_fake${id}`;
  u.avatar_url = `https://avatars.githubusercontent.com/u/${id}?v=4`;
  u.type = type;
  if (type === 'Bot') u.html_url = `https://github.com/apps/${login.replace(/\[bot\]$/, '')}`;
  return u;
}

function walk(v: unknown, visit: (o: J) => void): void {
  if (Array.isArray(v)) for (const x of v) walk(x, visit);
  else if (v && typeof v === 'object') {
    visit(v as J);
    for (const x of Object.values(v as J)) walk(x, visit);
  }
}

/** Rewrites every string of the payload that mentions `from` (e.g. `Codertocat/Hello-World`). */
function replaceStrings(v: unknown, from: string, to: string): unknown {
  if (typeof v === 'string') return v.includes(from) ? v.split(from).join(to) : v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = replaceStrings(v[i], from, to);
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v as J)) (v as J)[k] = replaceStrings(x, from, to);
  }
  return v;
}

// ---------- common adjustments ----------

function applyRepoObject(r: J, spec: RepoSpec): void {
  r.name = spec.repo;
  r.full_name = `${spec.owner}/${spec.repo}`;
  if (spec.repoId !== undefined) r.id = spec.repoId;
  r.clone_url = spec.cloneUrl ?? `https://github.com/${spec.owner}/${spec.repo}.git`;
  r.default_branch = spec.defaultBranch ?? 'main';
  if ('master_branch' in r) r.master_branch = r.default_branch;
  if (r.owner) setUser(r.owner, { login: spec.owner, type: 'User' });
}

/**
 * Repository, installation, sender and every stray mention of the example's owner and repo.
 * Users of the example that were its repo owner become the new owner.
 */
function applyBase(p: J, spec: RepoSpec): J {
  const exampleRepo: J | undefined = p.repository;
  const exampleOwner = String(exampleRepo?.owner?.login ?? p.installation?.account?.login ?? p.sender?.login ?? '');
  const exampleFull = String(exampleRepo?.full_name ?? '');
  delete p.organization;
  walk(p, (o) => {
    if (isUser(o) && o.login === exampleOwner) setUser(o, { login: spec.owner, type: 'User' });
  });
  if (exampleFull) replaceStrings(p, exampleFull, `${spec.owner}/${spec.repo}`);
  walk(p, (o) => {
    if (typeof o.full_name === 'string' && o.full_name === `${spec.owner}/${spec.repo}` && 'clone_url' in o) applyRepoObject(o, spec);
  });
  if (p.repository) applyRepoObject(p.repository, spec);
  // GitHub sends the installation (id and node_id) with every event delivered to an app.
  if (p.installation && typeof p.installation === 'object' && 'account' in p.installation) {
    p.installation.id = spec.installationId;
  } else {
    p.installation = { ...p.installation, id: spec.installationId, node_id: `IN_fake${spec.installationId}` };
  }
  setUser(p.sender, spec.sender ?? spec.owner);
  return p;
}

function labelFrom(template: J, name: string, spec: RepoSpec): J {
  const l = structuredClone(template);
  const id = fakeId(`label:${name}`);
  l.id = id;
  l.node_id = `LA_fake${id}`;
  l.name = name;
  l.url = `https://api.github.com/repos/${spec.owner}/${spec.repo}/labels/${encodeURIComponent(name)}`;
  l.default = false;
  l.description = null;
  l.color = 'ededed';
  return l;
}

/** The example's label object, used as the template for every label. */
function labelTemplate(): J {
  return exampleOf('issues', 'labeled', noOrg).label as J;
}

function applyIssue(p: J, issue: IssueSpec, spec: RepoSpec): void {
  const i: J = p.issue;
  const api = `https://api.github.com/repos/${spec.owner}/${spec.repo}/issues/${issue.number}`;
  i.number = issue.number;
  const id = fakeId(`issue:${spec.owner}/${spec.repo}#${issue.number}`);
  i.id = id;
  i.node_id = `I_fake${id}`;
  i.url = api;
  i.labels_url = `${api}/labels{/name}`;
  i.comments_url = `${api}/comments`;
  i.events_url = `${api}/events`;
  if ('timeline_url' in i) i.timeline_url = `${api}/timeline`;
  i.html_url = `https://github.com/${spec.owner}/${spec.repo}/${issue.isPullRequest ? 'pull' : 'issues'}/${issue.number}`;
  i.title = issue.title ?? `Issue ${issue.number}`;
  i.body = issue.body === undefined ? null : issue.body;
  setUser(i.user, issue.user ?? spec.owner);
  const template = (Array.isArray(i.labels) && i.labels[0]) || labelTemplate();
  i.labels = (issue.labels ?? []).map((n) => labelFrom(template, n, spec));
  const userTemplate: J = structuredClone(i.user);
  i.assignees = (issue.assignees ?? []).map((a) => setUser(structuredClone(userTemplate), a));
  i.assignee = i.assignees[0] ?? null;
  i.milestone = null;
  i.state = issue.state ?? 'open';
  i.closed_at = i.state === 'closed' ? (i.closed_at ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')) : null;
  if ('state_reason' in i || i.state === 'closed') i.state_reason = i.state === 'closed' ? 'completed' : null;
  i.locked = false;
  i.active_lock_reason = null;
  i.author_association = actorOf(issue.user ?? spec.owner).login === spec.owner ? 'OWNER' : 'NONE';
  if (issue.isPullRequest) {
    // Taken from an example whose issue is a pull request, then pointed at ours.
    const pr = structuredClone(exampleOf('issues', 'milestoned', noOrg).issue.pull_request as J);
    const html = `https://github.com/${spec.owner}/${spec.repo}/pull/${issue.number}`;
    pr.url = `https://api.github.com/repos/${spec.owner}/${spec.repo}/pulls/${issue.number}`;
    pr.html_url = html;
    pr.diff_url = `${html}.diff`;
    pr.patch_url = `${html}.patch`;
    pr.merged_at ??= null;
    i.pull_request = pr;
  } else {
    delete i.pull_request;
  }
}

function applyPull(p: J, pull: PullSpec, spec: RepoSpec): void {
  const pr: J = p.pull_request;
  const api = `https://api.github.com/repos/${spec.owner}/${spec.repo}`;
  const html = `https://github.com/${spec.owner}/${spec.repo}/pull/${pull.number}`;
  const id = fakeId(`pull:${spec.owner}/${spec.repo}#${pull.number}`);
  pr.number = pull.number;
  pr.id = id;
  pr.node_id = `PR_fake${id}`;
  pr.url = `${api}/pulls/${pull.number}`;
  pr.html_url = html;
  pr.diff_url = `${html}.diff`;
  pr.patch_url = `${html}.patch`;
  pr.issue_url = `${api}/issues/${pull.number}`;
  pr.commits_url = `${api}/pulls/${pull.number}/commits`;
  pr.review_comments_url = `${api}/pulls/${pull.number}/comments`;
  pr.comments_url = `${api}/issues/${pull.number}/comments`;
  pr.title = pull.title ?? `Goal #${pull.number}`;
  pr.body = pull.body === undefined ? null : pull.body;
  setUser(pr.user, pull.user ?? 'goal-loop[bot]');
  const template = (Array.isArray(pr.labels) && pr.labels[0]) || labelTemplate();
  pr.labels = (pull.labels ?? []).map((n) => labelFrom(template, n, spec));
  pr.assignee = null;
  pr.assignees = [];
  pr.requested_reviewers = [];
  pr.requested_teams = [];
  pr.milestone = null;
  pr.draft = pull.draft ?? false;
  const headSha = pull.headSha ?? createHash('sha1').update(`head:${pull.head}`).digest('hex');
  pr.head.ref = pull.head;
  pr.head.sha = headSha;
  pr.head.label = `${pull.headOwner ?? spec.owner}:${pull.head}`;
  if (pull.headOwner !== undefined && pull.headOwner !== spec.owner) forkHead(pr.head, pull.headOwner, spec);
  pr.base.ref = pull.base ?? spec.defaultBranch ?? 'main';
  pr.base.label = `${spec.owner}:${pr.base.ref}`;
  pr.statuses_url = `${api}/statuses/${headSha}`;
  if (pr._links) {
    pr._links.self = { href: pr.url };
    pr._links.html = { href: html };
    pr._links.issue = { href: pr.issue_url };
    pr._links.comments = { href: pr.comments_url };
    pr._links.review_comments = { href: pr.review_comments_url };
    pr._links.commits = { href: pr.commits_url };
    pr._links.statuses = { href: pr.statuses_url };
    if (pr._links.review_comment) pr._links.review_comment = { href: `${api}/pulls/comments{/number}` };
  }
  if ('number' in p) p.number = pull.number;
}

/** A fork's head: its user and repository are the fork's (another owner, another repository id), as GitHub sends them. */
function forkHead(head: J, forkOwner: string, spec: RepoSpec): void {
  const full = `${forkOwner}/${spec.repo}`;
  if (head.user) setUser(head.user, { login: forkOwner, type: 'User' });
  const r: J = head.repo;
  replaceStrings(r, `${spec.owner}/${spec.repo}`, full);
  r.full_name = full;
  r.id = fakeId(`repo:${full}`);
  r.node_id = `R_fake${r.id}`;
  r.fork = true;
  r.clone_url = `https://github.com/${full}.git`;
  if (r.owner) setUser(r.owner, { login: forkOwner, type: 'User' });
}

function applyComment(p: J, c: CommentSpec, issueNumber: number, spec: RepoSpec): void {
  const cm: J = p.comment;
  const id = c.id ?? fakeId(`comment:${c.body}:${Date.now()}:${Math.random()}`);
  cm.id = id;
  cm.node_id = `IC_fake${id}`;
  cm.url = `https://api.github.com/repos/${spec.owner}/${spec.repo}/issues/comments/${id}`;
  cm.html_url = `https://github.com/${spec.owner}/${spec.repo}/issues/${issueNumber}#issuecomment-${id}`;
  cm.issue_url = `https://api.github.com/repos/${spec.owner}/${spec.repo}/issues/${issueNumber}`;
  cm.body = c.body;
  const author = c.user ?? spec.sender ?? spec.owner;
  setUser(cm.user, author);
  cm.author_association = actorOf(author).login === spec.owner ? 'OWNER' : 'NONE';
  const t = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  cm.created_at = t;
  cm.updated_at = t;
}

// ---------- builders ----------

export function issuesLabeled(o: RepoSpec & { issue: IssueSpec; label: string }): IssuesLabeledPayload {
  const p = applyBase(exampleOf('issues', 'labeled', noOrg), o);
  const labels = o.issue.labels ?? [o.label];
  applyIssue(p, { ...o.issue, labels: labels.includes(o.label) ? labels : [...labels, o.label] }, o);
  p.label = labelFrom(p.label, o.label, o);
  return p as IssuesLabeledPayload;
}

export function issuesUnlabeled(o: RepoSpec & { issue: IssueSpec; label: string }): IssuesUnlabeledPayload {
  const p = applyBase(exampleOf('issues', 'unlabeled', noOrg), o);
  applyIssue(p, { ...o.issue, labels: (o.issue.labels ?? []).filter((l) => l !== o.label) }, o);
  p.label = labelFrom(p.label, o.label, o);
  return p as IssuesUnlabeledPayload;
}

/**
 * `@octokit/webhooks-examples` has no `issues.closed` example: this adjusts its `issues.reopened`
 * example (same shape) to the closed state.
 */
export function issuesClosed(o: RepoSpec & { issue: IssueSpec }): IssuesClosedPayload {
  const p = applyBase(exampleOf('issues', 'reopened', plain), o);
  p.action = 'closed';
  applyIssue(p, { ...o.issue, state: 'closed' }, o);
  return p as IssuesClosedPayload;
}

export function issueCommentCreated(o: RepoSpec & { issue: IssueSpec; comment: CommentSpec }): IssueCommentCreatedPayload {
  const p = applyBase(exampleOf('issue_comment', 'created', noOrg), o);
  applyIssue(p, o.issue, o);
  applyComment(p, o.comment, o.issue.number, o);
  return p as IssueCommentCreatedPayload;
}

export function issueCommentEdited(o: RepoSpec & { issue: IssueSpec; comment: CommentSpec; previousBody?: string }): IssueCommentEditedPayload {
  const p = applyBase(exampleOf('issue_comment', 'edited', noOrg), o);
  applyIssue(p, o.issue, o);
  applyComment(p, o.comment, o.issue.number, o);
  p.changes = { ...p.changes, body: { ...p.changes?.body, from: o.previousBody ?? '' } };
  return p as IssueCommentEditedPayload;
}

export function issueCommentDeleted(o: RepoSpec & { issue: IssueSpec; comment: CommentSpec }): IssueCommentDeletedPayload {
  const p = applyBase(exampleOf('issue_comment', 'deleted', noOrg), o);
  applyIssue(p, o.issue, o);
  applyComment(p, o.comment, o.issue.number, o);
  return p as IssueCommentDeletedPayload;
}

/**
 * `pull_request.closed`. The package's closed examples are all unmerged: with `merged: true` the
 * example is adjusted to a merge (merged, merged_at, merged_by, merge_commit_sha).
 */
export function pullRequestClosed(o: RepoSpec & { pull: PullSpec; merged: boolean; mergedBy?: Actor }): PullRequestClosedPayload {
  const p = applyBase(exampleOf('pull_request', 'closed', plain), o);
  applyPull(p, o.pull, o);
  const pr: J = p.pull_request;
  const t = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  pr.state = 'closed';
  pr.closed_at = t;
  pr.merged = o.merged;
  pr.merged_at = o.merged ? t : null;
  pr.merge_commit_sha = o.merged ? createHash('sha1').update(`merge:${o.pull.number}`).digest('hex') : pr.merge_commit_sha;
  pr.merged_by = o.merged ? setUser(structuredClone(p.sender), o.mergedBy ?? o.sender ?? o.owner) : null;
  pr.mergeable = null;
  pr.mergeable_state = 'unknown';
  return p as PullRequestClosedPayload;
}

export function pullRequestReviewSubmitted(o: RepoSpec & { pull: PullSpec; review: ReviewSpec }): PullRequestReviewSubmittedPayload {
  const p = applyBase(exampleOf('pull_request_review', 'submitted', plain), o);
  applyPull(p, o.pull, o);
  const r: J = p.review;
  const id = o.review.id ?? fakeId(`review:${o.pull.number}:${Date.now()}:${Math.random()}`);
  const html = `https://github.com/${o.owner}/${o.repo}/pull/${o.pull.number}#pullrequestreview-${id}`;
  const reviewer = o.review.user ?? o.sender ?? o.owner;
  r.id = id;
  r.node_id = `PRR_fake${id}`;
  r.state = o.review.state;
  r.body = o.review.body === undefined ? null : o.review.body;
  r.commit_id = o.review.commitId ?? p.pull_request.head.sha;
  r.html_url = html;
  r.pull_request_url = `https://api.github.com/repos/${o.owner}/${o.repo}/pulls/${o.pull.number}`;
  r.submitted_at = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  r.author_association = actorOf(reviewer).login === o.owner ? 'OWNER' : 'NONE';
  setUser(r.user, reviewer);
  if (r._links) {
    r._links.html = { href: html };
    r._links.pull_request = { href: r.pull_request_url };
  }
  return p as PullRequestReviewSubmittedPayload;
}

/**
 * `push` of `after` to `branch` (default: the default branch). The package's push examples carry
 * no `action`: the one on a branch with an installation is taken.
 */
export function pushed(o: RepoSpec & { after: string; before?: string; branch?: string }): PushPayload {
  const def = allExamples().find((d) => d.name === 'push');
  const example = (def?.examples ?? []).find((e): e is J => String((e as J).ref).startsWith('refs/heads/') && Boolean((e as J).installation));
  if (!example) throw new Error('@octokit/webhooks-examples has no push example on a branch');
  const p = applyBase(structuredClone(example), o);
  const branch = o.branch ?? o.defaultBranch ?? 'main';
  p.ref = `refs/heads/${branch}`;
  p.before = o.before ?? '0'.repeat(40);
  p.after = o.after;
  p.created = false;
  p.deleted = false;
  p.forced = false;
  p.compare = `https://github.com/${o.owner}/${o.repo}/compare/${p.before.slice(0, 12)}...${o.after.slice(0, 12)}`;
  p.commits = [];
  p.head_commit = null;
  if (p.repository) p.repository.master_branch = o.defaultBranch ?? 'main';
  return p as PushPayload;
}

export function installationCreated(o: Omit<RepoSpec, 'cloneUrl' | 'defaultBranch'> & { repositories?: string[] }): InstallationCreatedPayload {
  const p = exampleOf('installation', 'created', (e) => !e.requester);
  const exampleOwner = String(p.installation.account.login);
  walk(p, (x) => {
    if (isUser(x) && x.login === exampleOwner) setUser(x, { login: o.owner, type: 'User' });
  });
  const inst: J = p.installation;
  inst.id = o.installationId;
  inst.access_tokens_url = `https://api.github.com/app/installations/${o.installationId}/access_tokens`;
  inst.html_url = `https://github.com/settings/installations/${o.installationId}`;
  inst.target_id = fakeUserId(o.owner);
  inst.repository_selection = 'selected';
  const template: J = p.repositories[0];
  p.repositories = (o.repositories ?? [o.repo]).map((name, idx) => {
    const r = structuredClone(template);
    r.id = idx === 0 && o.repoId !== undefined ? o.repoId : fakeId(`repo:${o.owner}/${name}`);
    r.node_id = `R_fake${r.id}`;
    r.name = name;
    r.full_name = `${o.owner}/${name}`;
    return r;
  });
  setUser(p.sender, o.sender ?? o.owner);
  return p as InstallationCreatedPayload;
}

/** The CI app a `check_run` event comes from unless told: the fake GitHub's `CI_APP`. */
const CI_APP = { id: 9001, slug: 'ci-app' };

/** The example's app object, made into `app`. */
function applyApp(a: J, app: { id: number; slug: string }): void {
  a.id = app.id;
  a.slug = app.slug;
  a.node_id = `A_fake${app.id}`;
  a.name = app.slug;
  a.html_url = `https://github.com/apps/${app.slug}`;
  a.external_url = `https://${app.slug}.example.test`;
  a.description = `another app (${app.slug})`;
}

/**
 * `check_run.completed` of another app's check run (the repository's CI) on `headSha`: the
 * sender is the app's bot (`ci-app[bot]`), `pull_requests` the open PRs it ran for (default none).
 * For `github-actions` the check run's id is the job's id.
 */
export function checkRunCompleted(
  o: RepoSpec & {
    headSha: string;
    /** null: a fork's pull request at the same commit (GitHub gives its suite no head branch). */
    headBranch: string | null;
    name: string;
    conclusion: string;
    app?: { id: number; slug: string };
    checkRunId?: number;
    output?: { title?: string | null; summary?: string | null; text?: string | null };
    pullNumbers?: number[];
  },
): CheckRunCompletedPayload {
  const app = o.app ?? CI_APP;
  const p = applyBase(exampleOf('check_run', 'completed', noOrg), { ...o, sender: o.sender ?? `${app.slug}[bot]` });
  const api = `https://api.github.com/repos/${o.owner}/${o.repo}`;
  const run: J = p.check_run;
  const id = o.checkRunId ?? fakeId(`check_run:${o.name}:${o.headSha}:${Date.now()}:${Math.random()}`);
  run.id = id;
  run.node_id = `CR_fake${id}`;
  run.name = o.name;
  run.head_sha = o.headSha;
  run.external_id = '';
  run.url = `${api}/check-runs/${id}`;
  run.html_url = `https://github.com/${o.owner}/${o.repo}/runs/${id}`;
  run.details_url = run.html_url;
  run.status = 'completed';
  run.conclusion = o.conclusion;
  const t = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  run.started_at = t;
  run.completed_at = t;
  run.output = { ...run.output, title: o.output?.title ?? null, summary: o.output?.summary ?? null, text: o.output?.text ?? null, annotations_url: `${api}/check-runs/${id}/annotations` };
  applyApp(run.app, app);
  const suite: J = run.check_suite;
  const suiteId = fakeId(`suite:${app.slug}:${o.headSha}`);
  suite.id = suiteId;
  suite.node_id = `CS_fake${suiteId}`;
  suite.head_branch = o.headBranch;
  suite.head_sha = o.headSha;
  suite.after = o.headSha;
  suite.status = 'completed';
  suite.conclusion = o.conclusion;
  suite.url = `${api}/check-suites/${suiteId}`;
  if (suite.app) applyApp(suite.app, app);
  const template: J = run.pull_requests[0];
  const prs = (o.pullNumbers ?? []).map((n) => {
    const pr = structuredClone(template);
    pr.url = `${api}/pulls/${n}`;
    pr.id = fakeId(`pull:${o.owner}/${o.repo}#${n}`);
    pr.number = n;
    pr.head.ref = o.headBranch;
    pr.head.sha = o.headSha;
    pr.base.ref = o.defaultBranch ?? 'main';
    return pr;
  });
  run.pull_requests = prs;
  suite.pull_requests = structuredClone(prs);
  return p as CheckRunCompletedPayload;
}

/**
 * `status` of a commit status on `sha` (set by another service); `branches` are the branches
 * whose head it is (GitHub lists at most 10). The package's status examples carry no `action`.
 */
export function statusEvent(
  o: RepoSpec & { sha: string; context: string; state: 'error' | 'failure' | 'pending' | 'success'; branches: string[]; description?: string; targetUrl?: string },
): StatusPayload {
  const def = allExamples().find((d) => d.name === 'status');
  const example = (def?.examples ?? []).find((e): e is J => !(e as J).organization && Boolean((e as J).installation)) ?? (def?.examples[0] as J | undefined);
  if (!example) throw new Error('@octokit/webhooks-examples has no status example');
  const p = applyBase(structuredClone(example), o);
  const api = `https://api.github.com/repos/${o.owner}/${o.repo}`;
  const id = fakeId(`status:${o.context}:${o.sha}:${Date.now()}:${Math.random()}`);
  const t = new Date().toISOString().replace(/\.\d{3}Z$/, '+00:00');
  p.id = id;
  p.sha = o.sha;
  p.name = `${o.owner}/${o.repo}`;
  p.context = o.context;
  p.state = o.state;
  p.description = o.description ?? null;
  p.target_url = o.targetUrl ?? null;
  p.created_at = t;
  p.updated_at = t;
  const c: J = p.commit;
  c.sha = o.sha;
  c.url = `${api}/commits/${o.sha}`;
  c.html_url = `https://github.com/${o.owner}/${o.repo}/commit/${o.sha}`;
  c.comments_url = `${api}/commits/${o.sha}/comments`;
  if (c.commit) c.commit.url = `${api}/git/commits/${o.sha}`;
  p.branches = o.branches.map((name) => ({ name, commit: { sha: o.sha, url: `${api}/commits/${o.sha}` }, protected: false }));
  return p as StatusPayload;
}

// ---------- delivery ----------

/** Wraps a payload for `probot.receive`. */
export function toEvent(name: WebhookEventName, payload: object, id: string = randomUUID()): ProbotEvent {
  return { id, name, payload } as ProbotEvent;
}

/** The `x-hub-signature-256` value of `body` (the exact bytes sent). */
export function signPayload(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** The headers GitHub sends with a delivery (signed with `secret`). */
export function webhookHeaders(o: { event: string; deliveryId?: string; secret: string; body: string }): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/fake',
    'x-github-event': o.event,
    'x-github-delivery': o.deliveryId ?? randomUUID(),
    'x-github-hook-id': '1',
    'x-github-hook-installation-target-type': 'integration',
    'x-github-hook-installation-target-id': '1',
    'x-hub-signature-256': signPayload(o.secret, o.body),
  };
}

/** POSTs a signed delivery to `url` (e.g. `http://127.0.0.1:PORT/api/github/webhooks`). */
export async function deliverWebhook(url: string, o: { event: string; payload: object; secret: string; deliveryId?: string }): Promise<Response> {
  const body = JSON.stringify(o.payload);
  return fetch(url, { method: 'POST', headers: webhookHeaders({ event: o.event, deliveryId: o.deliveryId, secret: o.secret, body }), body });
}
