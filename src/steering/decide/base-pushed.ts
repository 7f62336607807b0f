import type { EventOf } from '../events.js';
import type { ConfigFact, EventDecision, GoalView } from './actions.js';
import { isMerged } from './common.js';

export interface BasePushedFacts {
  /** The repository's goals with an open PR (not merged, as GitHub says now) that rest complete, or that a worker runs now. */
  goals: GoalView[];
  /** Of those, the goals a worker runs now (holds, in a state of the loop: not one a status turn holds at rest). */
  running?: ReadonlySet<string>;
  /** `.github/goal-loop.yml`; loaded once some goal has an open PR. */
  config?: ConfigFact;
}

/**
 * A push to the default branch: every goal with an open, unmerged PR that rests complete runs
 * again, and its run brings the branch onto the new tip first (DESIGN.md §11). A run follows the
 * base only at its start, so a goal running now is not interrupted: the move is recorded, and a
 * run that ends complete runs again (checks-after-run.ts). A goal at rest for another reason
 * (escalated, stopped, paused) waits for its human. Nobody is asked for permission: a push to the
 * default branch is itself one only writers can make.
 */
export function decideBasePushed(e: EventOf<'base_pushed'>, facts: BasePushedFacts): EventDecision[] {
  if (!facts.config?.ok || facts.config.config.follow_base === 'off') return [];
  return facts.goals
    .filter((g) => typeof g.meta.prNumber === 'number' && !isMerged(g.meta))
    .flatMap((g): EventDecision[] => {
      const log = { type: 'log' as const, msg: 'the base branch moved: the goal follows it', data: { goal: goalName(g), branch: e.branch, after: e.after } };
      // Recorded for the run's end; the status turn queued behind the run looks too, should the run have ended meanwhile.
      if (facts.running?.has(goalName(g)))
        return [
          {
            key: g.key,
            actions: [
              { ...log, data: { ...log.data, running: true } },
              { type: 'setMeta', patch: { baseMovedDuringRun: e.after } },
              { type: 'schedule', mode: 'status', priority: g.priority },
            ],
          },
        ];
      if (g.state !== 'LOOP_COMPLETE') return [];
      return [{ key: g.key, actions: [log, { type: 'schedule', mode: 'run', priority: g.priority }] }];
    });
}

/** `owner/repo#goal-id`: how a goal is named in the facts and the logs. */
export const goalName = (g: Pick<GoalView, 'key'>): string => `${g.key.repo}#${g.key.goalId}`;
