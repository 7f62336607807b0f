import type { GoalSpec, TaskSpec } from '../../goal/schema.js';
import type { GitHubGoalMeta } from '../goal-meta.js';
import { planFromIssue } from '../plan-from-issue.js';
import type { TurnFacts } from './decide-turn.js';

/**
 * The issue's plan as it was accepted (the event side parsed the issue body once and stored the
 * spec in the ledger and the plan's kind in meta.issuePlan), or undefined when the worker must
 * read the issue itself: a goal accepted before issuePlan existed, or a ledger spec that lacks a
 * task a review added since (the issue could not be read when the review was accepted).
 * `plannedSpec`: the plan Claude wrote earlier, when it may stand in for a missing goal block.
 */
export function acceptedPlan(
  issuePlan: GitHubGoalMeta['issuePlan'],
  ledgerSpec: GoalSpec,
  goalId: string,
  extraTasks: TaskSpec[] | undefined,
  plannedSpec: GitHubGoalMeta['plannedSpec'],
): NonNullable<TurnFacts['issue']> | undefined {
  if (!issuePlan) return undefined;
  switch (issuePlan.kind) {
    case 'spec': {
      const ids = new Set(ledgerSpec.tasks.map((t) => t.id));
      if ((extraTasks ?? []).some((t) => !ids.has(t.id))) return undefined;
      return { plan: { kind: 'spec', spec: ledgerSpec }, hasBlock: true };
    }
    case 'invalid':
      return { plan: { kind: 'invalid', errors: issuePlan.errors }, hasBlock: true };
    case 'none':
      return { plan: plannedSpec ? planFromIssue('', goalId, extraTasks, plannedSpec) : { kind: 'none' }, hasBlock: false };
  }
}
