import { describe, expect, it } from 'vitest';
import type { Action } from '../../../src/steering/decide/actions.js';
import { decideIssueClosed, type IssueClosedFacts } from '../../../src/steering/decide/issue-closed.js';
import type { GoalEvent } from '../../../src/steering/events.js';
import { base, controlActions, goal, issue } from './fixtures.js';

const closed: Extract<GoalEvent, { type: 'issue_closed' }> = { ...base, type: 'issue_closed', issue: issue() };
const stop = (reason: string): Action[] => controlActions('stop', reason);
const mergedMark: Action = { type: 'setMeta', patch: { merged: true, prNumber: 9 } };

describe('decideIssueClosed: (event, facts) -> actions', () => {
  it.each<[string, IssueClosedFacts, Action[]]>([
    ['no goal: nothing', { goal: undefined, running: false }, []],
    ['already merged: nothing', { goal: goal('LOOP_COMPLETE', { merged: true, prNumber: 9 }), running: false }, []],
    ['no pull request yet: stopped', { goal: goal('EXECUTING'), running: true }, stop('the issue was closed')],
    ['pull request open: stopped', { goal: goal('LOOP_COMPLETE', { prNumber: 9 }), prMerged: false, running: false }, stop('the issue was closed')],
    [
      'pull request merged, goal complete: done, a queued run dropped, status turn',
      { goal: goal('LOOP_COMPLETE', { prNumber: 9 }), prMerged: true, running: false },
      [mergedMark, { type: 'cancel' }, { type: 'schedule', mode: 'status', priority: 'P1' }],
    ],
    [
      'pull request merged, goal stopped: done',
      { goal: goal('STOPPED', { prNumber: 9 }), prMerged: true, running: false },
      [mergedMark, { type: 'cancel' }, { type: 'schedule', mode: 'status', priority: 'P1' }],
    ],
    [
      'pull request merged mid-way: done and stopped',
      { goal: goal('AWAITING_APPROVAL', { prNumber: 9 }), prMerged: true, running: false },
      [mergedMark, ...stop('pull request #9 was merged before the goal was complete')],
    ],
    [
      'pull request merged while a worker runs it: done and stopped',
      { goal: goal('LOOP_COMPLETE', { prNumber: 9 }), prMerged: true, running: true },
      [mergedMark, ...stop('pull request #9 was merged before the goal was complete')],
    ],
  ])('%s', (_name, facts, actions) => {
    expect(decideIssueClosed(closed, facts).actions).toEqual(actions);
  });
});
