import type { Logger } from 'pino';
import { RepoConfigError } from '../../config/repo-config.js';
import { RESTING_STATES } from '../../goal/states.js';
import type { GoalKey, GoalLedger, GoalRecord } from '../../ports/goal-ledger.js';
import type { ConfigFact, GoalView } from '../decide/actions.js';
import { type BasePushedFacts, goalName } from '../decide/base-pushed.js';
import { ACCEPTING_COMMANDS, type CommandFacts } from '../decide/command.js';
import { isGoalPullRequest } from '../decide/common.js';
import { type HeadCheckedFacts, MAX_QUOTED_CHECKS, stageOf } from '../decide/head-checked.js';
import type { IssueClosedFacts } from '../decide/issue-closed.js';
import type { LabelFacts } from '../decide/label.js';
import type { PrClosedFacts } from '../decide/pr-closed.js';
import type { ReviewFacts } from '../decide/review.js';
import type { EventOf } from '../events.js';
import { readGitHubMeta } from '../goal-meta.js';
import type { IssueForge } from '../issue-forge.js';
import { goalKeyFor } from '../issue-goal.js';
import { counts, isFailing } from '../repo-checks.js';

export interface GatherDeps {
  ledger: Pick<GoalLedger, 'getGoal' | 'listGoals'>;
  logger: Logger;
  /** True while a worker holds the goal's lease. */
  isRunning: (key: GoalKey) => Promise<boolean>;
}

/*
 * The I/O before a decision: each gatherer asks the forge and the ledger what its decide/ function
 * needs, in the order the answers matter, and stops asking once an answer settles the event (a
 * label that is not the goal label asks nobody's permission; an invalid config loads no goal).
 */

export async function gatherLabel(deps: GatherDeps, forge: IssueForge, e: EventOf<'labeled' | 'unlabeled'>): Promise<LabelFacts> {
  const config = await configFact(forge);
  if (!config.ok || e.label !== config.config.label) return { config };
  const maySteer = await forge.maySteer(e.sender);
  if (!maySteer) return { config, maySteer };
  const goal = await goalAt(deps.ledger, goalKeyFor(e.owner, e.repo, e.issue.number));
  return { config, maySteer, goal, running: goal ? await deps.isRunning(goal.key) : false };
}

export async function gatherIssueClosed(deps: GatherDeps, forge: IssueForge, e: EventOf<'issue_closed'>): Promise<IssueClosedFacts> {
  const goal = await goalAt(deps.ledger, goalKeyFor(e.owner, e.repo, e.issue.number));
  if (!goal || goal.meta.merged === true) return { goal, running: false };
  const prNumber = goal.meta.prNumber;
  const prMerged = typeof prNumber === 'number' ? await forge.isOwnPullMerged(prNumber, goal.meta.github?.branch) : undefined;
  return { goal, running: await deps.isRunning(goal.key), ...(prMerged !== undefined ? { prMerged } : {}) };
}

export async function gatherPrClosed(deps: GatherDeps, e: EventOf<'pr_closed'>): Promise<PrClosedFacts> {
  const goal = await goalWhere(deps.ledger, e.owner, e.repo, (m) => isGoalPullRequest(m, e));
  return { goal, running: goal ? await deps.isRunning(goal.key) : false };
}

export async function gatherCommand(deps: GatherDeps, forge: IssueForge, e: EventOf<'command'>): Promise<CommandFacts> {
  const maySteer = await forge.maySteer(e.sender);
  if (!maySteer || !e.command.ok || e.command.command.name === 'help') return { maySteer };
  const name = e.command.command.name;
  if (name === 'start') {
    if (e.isPullRequest) return { maySteer };
    const config = await configFact(forge);
    if (!config.ok) return { maySteer, config };
    const goal = await goalAt(deps.ledger, goalKeyFor(e.owner, e.repo, e.issue.number));
    return { maySteer, config, goal, running: goal ? await deps.isRunning(goal.key) : false };
  }
  const goal = e.isPullRequest ? await goalWhere(deps.ledger, e.owner, e.repo, (m) => m.prNumber === e.issue.number) : await goalAt(deps.ledger, goalKeyFor(e.owner, e.repo, e.issue.number));
  if (!goal || !ACCEPTING_COMMANDS.has(name)) return { maySteer, goal };
  // A pull request's comment carries the pull request's body: the goal's issue is read instead.
  const issueBody = e.isPullRequest ? await issueBodyOf(deps, forge, goal) : (e.issue.body ?? '');
  return { maySteer, goal, issueBody, running: await deps.isRunning(goal.key) };
}

export async function gatherReview(deps: GatherDeps, forge: IssueForge, e: EventOf<'review'>): Promise<ReviewFacts> {
  // Only the goal's own pull request: nobody's permission is asked for a fork's.
  const goal = await goalWhere(deps.ledger, e.owner, e.repo, (m) => isGoalPullRequest(m, e));
  if (!goal) return { goal };
  const maySteer = await forge.maySteer(e.sender);
  if (!maySteer) return { goal, maySteer };
  const comments = await forge.reviewComments(e.prNumber, e.reviewId);
  const facts: ReviewFacts = { goal, maySteer, comments };
  if ((e.state === 'commented' && comments.length === 0) || goal.meta.merged === true) return facts;
  const config = await configFact(forge);
  if (!config.ok) return { ...facts, config };
  return { ...facts, config, issueBody: await issueBodyOf(deps, forge, goal), running: await deps.isRunning(goal.key) };
}

export async function gatherBasePushed(deps: GatherDeps, forge: IssueForge, e: EventOf<'base_pushed'>): Promise<BasePushedFacts> {
  const goals: GoalView[] = [];
  const running = new Set<string>();
  for (const g of (await deps.ledger.listGoals()).filter((r) => r.repo === `${e.owner}/${e.repo}`).map(goalView)) {
    const pr = g.meta.prNumber;
    if (typeof pr !== 'number' || g.meta.merged === true) continue;
    if (g.state !== 'LOOP_COMPLETE') {
      // A goal at rest for another reason may be held by a status turn: only one in the loop is running.
      if (RESTING_STATES.has(g.state) || !(await deps.isRunning(g.key))) continue;
      running.add(goalName(g));
    }
    // The push of a PR's own merge may come before its pull_request.closed: a merged PR is not followed.
    if (await forge.isOwnPullMerged(pr, g.meta.github?.branch)) continue;
    goals.push(g);
  }
  // The config is read only when some goal has a pull request to keep up to date.
  return goals.length === 0 ? { goals } : { goals, running, config: await configFact(forge) };
}

export async function gatherHeadChecked(deps: GatherDeps, forge: IssueForge, e: EventOf<'head_checked'>): Promise<HeadCheckedFacts> {
  const goal = await goalWhere(deps.ledger, e.owner, e.repo, (m) => typeof m.prNumber === 'number' && m.github !== undefined && e.branches.includes(m.github.branch));
  if (!goal || goal.meta.merged === true) return { goal };
  // A passing check can only make a finished goal's draft ready: most check events ask nothing more.
  const passing = !isFailing(e.check);
  if (passing && goal.state !== 'LOOP_COMPLETE') return { goal };
  const ownAppId = await forge.ownAppId();
  if (e.check.appId !== null && e.check.appId === ownAppId) return { goal, ownAppId };
  const g = goal.meta.github!;
  const pull = await forge.pullHead(goal.meta.prNumber!, g.branch);
  // Only the PR's head counts: a check on an older head (pushed over since) asks nothing.
  if (!pull?.open || pull.head !== e.sha || (passing && !pull.draft)) return { goal, ownAppId, ...(pull ? { pull } : {}) };
  const config = await configFact(forge);
  if (!config.ok) return { goal, ownAppId, pull, config };
  const [required, checks, running] = await Promise.all([forge.requiredChecks(g.defaultBranch), forge.headChecks(e.sha, ownAppId), deps.isRunning(goal.key)]);
  const facts: HeadCheckedFacts = { goal, ownAppId, pull, config, required, checks, running };
  if (stageOf(e, facts) !== 'fix') return facts;
  const failing = checks.filter((c) => isFailing(c) && counts(c, required)).slice(0, MAX_QUOTED_CHECKS);
  const details = new Map(await Promise.all(failing.map(async (c) => [c.id, await forge.checkFailure(c)] as const)));
  return { ...facts, details, issueBody: await issueBodyOf(deps, forge, goal) };
}

/** The ledger's record of a goal, its meta read through the policy's schema. */
export function goalView(g: GoalRecord): GoalView {
  return { key: { repo: g.repo, goalId: g.goalId }, state: g.state, priority: g.priority, spec: g.spec, meta: readGitHubMeta(g.meta) };
}

async function goalAt(ledger: GatherDeps['ledger'], key: GoalKey): Promise<GoalView | undefined> {
  const g = await ledger.getGoal(key);
  return g ? goalView(g) : undefined;
}

async function goalWhere(ledger: GatherDeps['ledger'], owner: string, repo: string, match: (meta: GoalView['meta']) => boolean): Promise<GoalView | undefined> {
  for (const g of await ledger.listGoals()) {
    if (g.repo !== `${owner}/${repo}`) continue;
    const view = goalView(g);
    if (match(view.meta)) return view;
  }
  return undefined;
}

/** The owner's config, or why it is invalid (any other failure rejects: the event is retried). */
export async function configFact(forge: Pick<IssueForge, 'loadConfig'>): Promise<ConfigFact> {
  try {
    return { ok: true, config: await forge.loadConfig() };
  } catch (err) {
    if (!(err instanceof RepoConfigError)) throw err;
    return { ok: false, problems: err.problems };
  }
}

/** The goal's issue body, read from the forge; undefined (logged) when it cannot be read: the worker reads it again. */
async function issueBodyOf(deps: GatherDeps, forge: IssueForge, goal: GoalView): Promise<string | undefined> {
  const g = goal.meta.github;
  if (!g) return undefined;
  try {
    return (await forge.readIssue(g.issueNumber)).body;
  } catch (err) {
    deps.logger.warn({ err, goal: `${goal.key.repo}#${goal.key.goalId}` }, 'could not read the goal issue; its plan is read again when the goal runs');
    return undefined;
  }
}
