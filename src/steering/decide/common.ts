import type { TaskSpec } from '../../goal/schema.js';
import { RESTING_STATES } from '../../goal/states.js';
import type { PullRef } from '../events.js';
import type { GitHubGoal, GitHubGoalMeta } from '../goal-meta.js';
import { type IssuePlan, planFromIssue } from '../plan-from-issue.js';
import type { Action, ConfigFact, GoalView } from './actions.js';

/** The sender may not steer: say so on the issue or pull request, and log it. */
export function refuseSender(sender: string, eventType: string, issueNumber: number): Action[] {
  return [
    { type: 'comment', issueNumber, body: `@${sender} only people with write access to this repository can start or steer a goal.` },
    { type: 'log', msg: 'refused: no write access', data: { sender, type: eventType } },
  ];
}

export function invalidConfigComment(config: Extract<ConfigFact, { ok: false }>, issueNumber: number): Action {
  return { type: 'comment', issueNumber, body: `goal-loop cannot run: \`.github/goal-loop.yml\` is invalid.\n\n${config.problems.map((p) => `- ${p}`).join('\n')}` };
}

export const isMerged = (meta: GitHubGoalMeta): boolean => meta.merged === true;

/**
 * The pull request is the goal's own: the number the goal recorded when the App opened it, from
 * the goal's branch, with its head in this repository. Anyone can open a pull request from a fork
 * whose branch is named like the goal's; its events must steer nothing.
 */
export function isGoalPullRequest(meta: GitHubGoalMeta, pr: PullRef): boolean {
  const head = pr.headRepo;
  return (
    typeof meta.prNumber === 'number' &&
    meta.prNumber === pr.prNumber &&
    meta.github?.branch === pr.headRef &&
    head !== null &&
    head !== undefined &&
    head.id === pr.baseRepo.id &&
    head.fullName.toLowerCase() === pr.baseRepo.fullName.toLowerCase()
  );
}

export function doneRefusal(meta: GitHubGoalMeta): string {
  const pr = typeof meta.prNumber === 'number' ? `pull request #${meta.prNumber}` : 'its pull request';
  return `This goal is done: ${pr} was merged. Open a new issue for more work.`;
}

export const noTaskRefusal = (taskId: string): string => `There is no task \`${taskId}\` in this goal.`;

/**
 * A human's pause or stop: no queued run may start the goal again behind their back; the request
 * is always recorded (a running loop picks it up within seconds, and a worker that takes the goal
 * later honors it), applied at once to a goal no worker runs, and a status turn settles a loop
 * that was just finishing and missed it.
 */
export function pauseOrStop(goal: GoalView | undefined, request: 'pause' | 'stop', reason: string): Action[] {
  if (!goal) return [];
  return [
    { type: 'cancel' },
    { type: 'setMeta', patch: { controlReason: reason } },
    { type: 'setControl', control: request },
    { type: 'settleRestingIfIdle' },
    { type: 'schedule', mode: 'status', priority: goal.priority },
  ];
}

/** The goal's pull request was merged: the goal is done, and nothing may run it again. */
export function merged(goal: GoalView, prNumber: number, running: boolean): Action[] {
  if (isMerged(goal.meta)) return [];
  const finished = goal.state === 'LOOP_COMPLETE' || goal.state === 'STOPPED';
  const mark: Action = { type: 'setMeta', patch: { merged: true, prNumber } };
  if (!finished || running) return [mark, ...pauseOrStop(goal, 'stop', `pull request #${prNumber} was merged before the goal was complete`)];
  // A queued run (a review's fix) has nothing left to do; the status turn makes the label goal:done.
  return [mark, { type: 'cancel' }, { type: 'schedule', mode: 'status', priority: goal.priority }];
}

/**
 * The spec at acceptance: the issue body (from the event, or fetched for a pull request) is parsed
 * once, where a start, plan, approve, resume, retry or review is accepted. Its kind is recorded in
 * meta for the worker, and a valid spec (with the reviews' tasks) becomes the goal's spec in the
 * ledger. Two cases leave the plan to the worker's next turn, which reads the issue itself when
 * meta has no `issuePlan`: the issue could not be read, or a loop is running the goal (its tasks
 * must not change under it: a task dropped from the issue would vanish from the ledger mid-run).
 */
export function acceptSpec(input: { goalId: string; issueBody: string | undefined; extraTasks: TaskSpec[] | undefined; github: GitHubGoal | undefined; running: boolean }): Action[] {
  if (!input.github) return [];
  if (input.issueBody === undefined || input.running) return [{ type: 'setMeta', patch: { issuePlan: null } }];
  const plan = planFromIssue(input.issueBody, input.goalId, input.extraTasks);
  return [{ type: 'acceptPlan', ...(plan.kind === 'spec' ? { spec: plan.spec } : {}), branch: input.github.branch, issuePlan: issuePlanOf(plan) }];
}

export const isResting = (goal: GoalView): boolean => RESTING_STATES.has(goal.state);

/** What meta keeps of an issue's plan: its kind (the spec itself goes to the ledger). */
export function issuePlanOf(plan: IssuePlan): NonNullable<GitHubGoalMeta['issuePlan']> {
  return plan.kind === 'invalid' ? { kind: 'invalid', errors: plan.errors } : { kind: plan.kind };
}
