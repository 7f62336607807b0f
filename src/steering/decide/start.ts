import type { EventOf } from '../events.js';
import { githubGoalFrom, goalKeyFor } from '../issue-goal.js';
import { priorityFromLabels } from '../labels.js';
import { planFromIssue } from '../plan-from-issue.js';
import type { Action, EventDecision, GoalView } from './actions.js';
import { acceptSpec, doneRefusal, isMerged, isResting, issuePlanOf } from './common.js';

export interface StartFacts {
  /** The issue's goal in the ledger, if it has one. */
  existing: GoalView | undefined;
  /** A worker holds the goal's lease. */
  running: boolean;
}

/** Starts (or restarts) the issue's goal, or refuses with a message for the user. */
export function decideStart(e: EventOf<'labeled' | 'command'>, facts: StartFacts): { refusal: string } | EventDecision {
  const key = goalKeyFor(e.owner, e.repo, e.issue.number);
  const { existing } = facts;
  if (existing && isMerged(existing.meta)) return { refusal: doneRefusal(existing.meta) };
  const body = e.issue.body ?? '';
  if (existing && !isResting(existing) && facts.running) {
    // Already working; a pause on its way in is overruled, and a run follows if it rests first.
    return {
      key,
      actions: [
        ...acceptSpec({ goalId: key.goalId, issueBody: body, extraTasks: existing.meta.extraTasks, github: existing.meta.github, running: true }),
        { type: 'setControl', control: null },
        { type: 'schedule', mode: 'run', priority: existing.priority },
      ],
    };
  }
  const github = githubGoalFrom(e.repository, e.issue, e.installationId);
  const priority = priorityFromLabels(e.issue.labels ?? []);
  const plan = planFromIssue(body, key.goalId, existing?.meta.extraTasks);
  const spec = plan.kind === 'spec' ? plan.spec : { goal_id: key.goalId, objective: e.issue.title, constraints: [], acceptance_criteria: [], tasks: [] };
  const actions: Action[] = [
    { type: 'upsertGoal', spec, branch: github.branch, priority },
    { type: 'setMeta', patch: { github, issuePlan: issuePlanOf(plan) } },
    { type: 'setControl', control: null },
    { type: 'setState', state: 'INITIALIZING', event: 'start', detail: `started by @${e.sender}`, stopReason: null },
    { type: 'schedule', mode: 'run', priority },
  ];
  return { key, actions };
}
