import type { EventOf } from '../events.js';
import type { EventDecision, GoalView } from './actions.js';
import { isGoalPullRequest, merged, pauseOrStop } from './common.js';

export interface PrClosedFacts {
  /** The goal whose pull request this is, if any (see isGoalPullRequest). */
  goal: GoalView | undefined;
  running: boolean;
}

/** pull_request.closed on a goal branch: merged -> done, closed unmerged -> stopped. */
export function decidePrClosed(e: EventOf<'pr_closed'>, facts: PrClosedFacts): EventDecision {
  const { goal } = facts;
  if (!goal || !isGoalPullRequest(goal.meta, e)) return { actions: [] };
  if (e.merged) return { key: goal.key, actions: merged(goal, e.prNumber, facts.running) };
  return { key: goal.key, actions: pauseOrStop(goal, 'stop', 'the pull request was closed without merging') };
}
