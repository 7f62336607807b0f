import { describe, expect, it } from 'vitest';
import type { Action } from '../../../src/steering/decide/actions.js';
import { decidePrClosed, type PrClosedFacts } from '../../../src/steering/decide/pr-closed.js';
import type { GoalEvent } from '../../../src/steering/events.js';
import { goal as anyGoal, base, controlActions, forkPull, KEY, ownPull } from './fixtures.js';

type Closed = Extract<GoalEvent, { type: 'pr_closed' }>;
const closed = (merged: boolean, pull: typeof ownPull = ownPull): Closed => ({ ...base, ...pull, type: 'pr_closed', merged });
/** A goal whose recorded pull request is #9. */
const goal: typeof anyGoal = (state, meta = {}) => anyGoal(state, { prNumber: 9, ...meta });
const stop = (reason: string): Action[] => controlActions('stop', reason);
const mergedMark: Action = { type: 'setMeta', patch: { merged: true, prNumber: 9 } };

describe('decidePrClosed: (event, facts) -> actions', () => {
  it.each<[string, boolean, PrClosedFacts, Action[]]>([
    ['not a goal branch: nothing', true, { goal: undefined, running: false }, []],
    ['closed unmerged: stopped', false, { goal: goal('LOOP_COMPLETE'), running: false }, stop('the pull request was closed without merging')],
    ['merged, goal complete: done', true, { goal: goal('LOOP_COMPLETE'), running: false }, [mergedMark, { type: 'cancel' }, { type: 'schedule', mode: 'status', priority: 'P1' }]],
    ['merged before the goal was complete: done and stopped', true, { goal: goal('EXECUTING'), running: false }, [mergedMark, ...stop('pull request #9 was merged before the goal was complete')]],
    ['merged while a worker runs it: done and stopped', true, { goal: goal('STOPPED'), running: true }, [mergedMark, ...stop('pull request #9 was merged before the goal was complete')]],
    ['merged twice: nothing the second time', true, { goal: goal('LOOP_COMPLETE', { merged: true, prNumber: 9 }), running: false }, []],
  ])('%s', (_name, merged, facts, actions) => {
    const d = decidePrClosed(closed(merged), facts);
    expect(d.actions).toEqual(actions);
    if (actions.length > 0) expect(d.key).toEqual(KEY);
  });

  it.each<[string, Closed, PrClosedFacts]>([
    ['a fork whose branch is named like the goal branch, merged', closed(true, forkPull), { goal: goal('ESCALATED'), running: false }],
    ['a fork whose branch is named like the goal branch, closed', closed(false, forkPull), { goal: goal('ESCALATED'), running: false }],
    ['a fork that is gone (no head repository)', closed(false, { ...ownPull, headRepo: null } as unknown as typeof ownPull), { goal: goal('ESCALATED'), running: false }],
    ['another pull request of this repository from the goal branch', closed(true, { ...ownPull, prNumber: 10 }), { goal: goal('ESCALATED'), running: false }],
    ['the goal recorded no pull request yet', closed(true), { goal: anyGoal('ESCALATED'), running: false }],
    ['the head is another branch', closed(true, { ...ownPull, headRef: 'goal/8-other' }), { goal: goal('ESCALATED'), running: false }],
  ])('not the goal’s own pull request (%s): nothing', (_name, e, facts) => {
    expect(decidePrClosed(e, facts).actions).toEqual([]);
  });
});
