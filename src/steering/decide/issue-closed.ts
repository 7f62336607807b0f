import type { EventOf } from '../events.js';
import type { EventDecision, GoalView } from './actions.js';
import { isMerged, merged, pauseOrStop } from './common.js';

export interface IssueClosedFacts {
  goal: GoalView | undefined;
  /** Whether the goal's pull request (meta.prNumber) is merged; asked only when it has one. */
  prMerged?: boolean;
  running: boolean;
}

/**
 * GitHub closes the issue because the merged pull request says `Closes #n`, and the two events
 * arrive in either order: a closed issue whose goal's pull request is merged is the merge.
 */
export function decideIssueClosed(_e: EventOf<'issue_closed'>, facts: IssueClosedFacts): EventDecision {
  const { goal } = facts;
  if (!goal || isMerged(goal.meta)) return { actions: [] };
  const prNumber = goal.meta.prNumber;
  if (typeof prNumber === 'number' && facts.prMerged) return { key: goal.key, actions: merged(goal, prNumber, facts.running) };
  return { key: goal.key, actions: pauseOrStop(goal, 'stop', 'the issue was closed') };
}
