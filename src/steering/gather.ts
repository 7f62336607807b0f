import type { Logger } from 'pino';
import { RepoConfigError } from '../config/repo-config.js';
import type { GoalKey, GoalRecord, Ledger } from '../ports/ledger.js';
import { canSteer } from '../github/authorize.js';
import type { ConfigFact, GoalView } from './decide/actions.js';
import { ACCEPTING_COMMANDS, type CommandFacts } from './decide/command.js';
import { isGoalPullRequest } from './decide/common.js';
import type { IssueClosedFacts } from './decide/issue-closed.js';
import type { LabelFacts } from './decide/label.js';
import type { PrClosedFacts } from './decide/pr-closed.js';
import type { ReviewFacts } from './decide/review.js';
import type { EventOf } from './events.js';
import type { Octokit } from '../github/github-forge.js';
import { goalKeyFor } from './issue-goal.js';
import { readGitHubMeta } from './goal-meta.js';
import { loadRepoConfig } from '../github/repo-config-loader.js';

export interface GatherDeps {
  ledger: Ledger;
  logger: Logger;
  /** True while a worker holds the goal's lease. */
  isRunning: (key: GoalKey) => Promise<boolean>;
}

/*
 * The I/O before a decision: each gatherer asks GitHub and the ledger what its decide/ function
 * needs, in the order the answers matter, and stops asking once an answer settles the event (a
 * label that is not the goal label asks nobody's permission; an invalid config loads no goal).
 */

export async function gatherLabel(deps: GatherDeps, o: Octokit, e: EventOf<'labeled' | 'unlabeled'>): Promise<LabelFacts> {
  const config = await configFact(o, e.owner, e.repo);
  if (!config.ok || e.label !== config.config.label) return { config };
  const maySteer = await canSteer(o, e.owner, e.repo, e.sender);
  if (!maySteer) return { config, maySteer };
  const goal = await goalAt(deps.ledger, goalKeyFor(e.owner, e.repo, e.issue.number));
  return { config, maySteer, goal, running: goal ? await deps.isRunning(goal.key) : false };
}

export async function gatherIssueClosed(deps: GatherDeps, o: Octokit, e: EventOf<'issue_closed'>): Promise<IssueClosedFacts> {
  const goal = await goalAt(deps.ledger, goalKeyFor(e.owner, e.repo, e.issue.number));
  if (!goal || goal.meta.merged === true) return { goal, running: false };
  const prNumber = goal.meta.prNumber;
  const prMerged = typeof prNumber === 'number' ? await ownPullMerged(o, e, prNumber, goal.meta.github?.branch) : undefined;
  return { goal, running: await deps.isRunning(goal.key), ...(prMerged !== undefined ? { prMerged } : {}) };
}

export async function gatherPrClosed(deps: GatherDeps, e: EventOf<'pr_closed'>): Promise<PrClosedFacts> {
  const goal = await goalWhere(deps.ledger, e.owner, e.repo, (m) => isGoalPullRequest(m, e));
  return { goal, running: goal ? await deps.isRunning(goal.key) : false };
}

export async function gatherCommand(deps: GatherDeps, o: Octokit, e: EventOf<'command'>): Promise<CommandFacts> {
  const maySteer = await canSteer(o, e.owner, e.repo, e.sender);
  if (!maySteer || !e.command.ok || e.command.command.name === 'help') return { maySteer };
  const name = e.command.command.name;
  if (name === 'start') {
    if (e.isPullRequest) return { maySteer };
    const config = await configFact(o, e.owner, e.repo);
    if (!config.ok) return { maySteer, config };
    const goal = await goalAt(deps.ledger, goalKeyFor(e.owner, e.repo, e.issue.number));
    return { maySteer, config, goal, running: goal ? await deps.isRunning(goal.key) : false };
  }
  const goal = e.isPullRequest
    ? await goalWhere(deps.ledger, e.owner, e.repo, (m) => m.prNumber === e.issue.number)
    : await goalAt(deps.ledger, goalKeyFor(e.owner, e.repo, e.issue.number));
  if (!goal || !ACCEPTING_COMMANDS.has(name)) return { maySteer, goal };
  // A pull request's comment carries the pull request's body: the goal's issue is read instead.
  const issueBody = e.isPullRequest ? await issueBodyOf(deps, o, goal) : (e.issue.body ?? '');
  return { maySteer, goal, issueBody, running: await deps.isRunning(goal.key) };
}

export async function gatherReview(deps: GatherDeps, o: Octokit, e: EventOf<'review'>): Promise<ReviewFacts> {
  // Only the goal's own pull request: nobody's permission is asked for a fork's.
  const goal = await goalWhere(deps.ledger, e.owner, e.repo, (m) => isGoalPullRequest(m, e));
  if (!goal) return { goal };
  const maySteer = await canSteer(o, e.owner, e.repo, e.sender);
  if (!maySteer) return { goal, maySteer };
  const comments = await o.paginate(o.rest.pulls.listCommentsForReview, { owner: e.owner, repo: e.repo, pull_number: e.prNumber, review_id: e.reviewId, per_page: 100 });
  const facts: ReviewFacts = { goal, maySteer, comments: comments.map((c) => ({ path: c.path, line: c.line ?? null, body: c.body })) };
  if ((e.state === 'commented' && comments.length === 0) || goal.meta.merged === true) return facts;
  const config = await configFact(o, e.owner, e.repo);
  if (!config.ok) return { ...facts, config };
  return { ...facts, config, issueBody: await issueBodyOf(deps, o, goal), running: await deps.isRunning(goal.key) };
}

/** The goal's recorded pull request is merged, and is still the goal's: its head the goal branch, in this repository. */
async function ownPullMerged(o: Octokit, e: { owner: string; repo: string }, prNumber: number, branch: string | undefined): Promise<boolean> {
  const { data: pr } = await o.rest.pulls.get({ owner: e.owner, repo: e.repo, pull_number: prNumber });
  const inRepo = pr.head.repo !== null && pr.head.repo.id === pr.base.repo.id;
  return Boolean(pr.merged) && inRepo && pr.head.ref === branch;
}

/** The ledger's record of a goal, its meta read through the App's schema. */
export function goalView(g: GoalRecord): GoalView {
  return { key: { repo: g.repo, goalId: g.goalId }, state: g.state, priority: g.priority, spec: g.spec, meta: readGitHubMeta(g.meta) };
}

async function goalAt(ledger: Ledger, key: GoalKey): Promise<GoalView | undefined> {
  const g = await ledger.getGoal(key);
  return g ? goalView(g) : undefined;
}

async function goalWhere(ledger: Ledger, owner: string, repo: string, match: (meta: GoalView['meta']) => boolean): Promise<GoalView | undefined> {
  for (const g of await ledger.listGoals()) {
    if (g.repo !== `${owner}/${repo}`) continue;
    const view = goalView(g);
    if (match(view.meta)) return view;
  }
  return undefined;
}

async function configFact(o: Octokit, owner: string, repo: string): Promise<ConfigFact> {
  try {
    return { ok: true, config: await loadRepoConfig(o, owner, repo) };
  } catch (err) {
    if (!(err instanceof RepoConfigError)) throw err;
    return { ok: false, problems: err.problems };
  }
}

/** The goal's issue body, read from GitHub; undefined (logged) when it cannot be read: the worker reads it again. */
async function issueBodyOf(deps: GatherDeps, o: Octokit, goal: GoalView): Promise<string | undefined> {
  const g = goal.meta.github;
  if (!g) return undefined;
  try {
    return (await o.rest.issues.get({ owner: g.owner, repo: g.repo, issue_number: g.issueNumber })).data.body ?? '';
  } catch (err) {
    deps.logger.warn({ err, goal: `${goal.key.repo}#${goal.key.goalId}` }, 'could not read the goal issue; its plan is read again when the goal runs');
    return undefined;
  }
}
