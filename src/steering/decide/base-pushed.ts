import type { EventOf } from '../events.js';
import type { ConfigFact, EventDecision, GoalView } from './actions.js';
import { isMerged } from './common.js';

export interface BasePushedFacts {
  /** The repository's goals that rest complete with an open PR (not merged, as GitHub says now). */
  goals: GoalView[];
  /** `.github/goal-loop.yml`; loaded once some goal has an open PR. */
  config?: ConfigFact;
}

/**
 * A push to the default branch: every goal with an open, unmerged PR that rests complete runs
 * again, and its run brings the branch onto the new tip first (DESIGN.md §11; the worker's run
 * follows the base at its start, so a goal running now follows at its next run). A goal at rest
 * for another reason (escalated, stopped, paused) waits for its human. Nobody is asked for
 * permission: a push to the default branch is itself one only writers can make.
 */
export function decideBasePushed(e: EventOf<'base_pushed'>, facts: BasePushedFacts): EventDecision[] {
  if (!facts.config?.ok || facts.config.config.follow_base === 'off') return [];
  return facts.goals
    .filter((g) => typeof g.meta.prNumber === 'number' && !isMerged(g.meta) && g.state === 'LOOP_COMPLETE')
    .map((g) => ({
      key: g.key,
      actions: [
        { type: 'log', msg: 'the base branch moved: the goal follows it', data: { goal: `${g.key.repo}#${g.key.goalId}`, branch: e.branch, after: e.after } },
        { type: 'schedule', mode: 'run', priority: g.priority },
      ],
    }));
}
