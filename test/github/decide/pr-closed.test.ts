import { describe, expect, it } from 'vitest';
import type { Action } from '../../../src/github/decide/actions.js';
import { decidePrClosed, type PrClosedFacts } from '../../../src/github/decide/pr-closed.js';
import type { GoalEvent } from '../../../src/github/events.js';
import { base, controlActions, goal, github, KEY } from './fixtures.js';

const closed = (merged: boolean): Extract<GoalEvent, { type: 'pr_closed' }> => ({ ...base, type: 'pr_closed', prNumber: 9, merged, headRef: github.branch });
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
    if (actions.length) expect(d.key).toEqual(KEY);
  });
});
