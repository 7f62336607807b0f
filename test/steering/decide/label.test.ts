import { describe, expect, it } from 'vitest';
import type { Action } from '../../../src/steering/decide/actions.js';
import { decideLabel, type LabelFacts } from '../../../src/steering/decide/label.js';
import type { GoalEvent } from '../../../src/steering/events.js';
import { base, controlActions, GOAL_BLOCK, github, goal, INVALID_BLOCK, INVALID_CONFIG_BODY, invalid, issue, KEY, ok, REFUSED_BODY } from './fixtures.js';

type LabelEvent = Extract<GoalEvent, { type: 'labeled' | 'unlabeled' }>;
const labeled = (label = 'goal', body: string | null = GOAL_BLOCK): LabelEvent => ({ ...base, type: 'labeled', label, issue: issue(body, [{ name: 'goal' }, { name: 'P0' }]) });
const unlabeled = (label = 'goal'): LabelEvent => ({ ...base, type: 'unlabeled', label, issue: issue() });

const freshStart = (issuePlan: unknown, tasks: string[]): Action[] => [
  expect.objectContaining({
    type: 'upsertGoal',
    branch: github.branch,
    priority: 'P0',
    spec: expect.objectContaining({ goal_id: '7', tasks: tasks.map((id): unknown => expect.objectContaining({ id })) }),
  }),
  { type: 'setMeta', patch: { github, issuePlan } },
  { type: 'setControl', control: null },
  { type: 'setState', state: 'INITIALIZING', event: 'start', detail: 'started by @alice', stopReason: null },
  { type: 'schedule', mode: 'run', priority: 'P0' },
];

const pause: Action[] = controlActions('pause', 'the goal label was removed');

describe('decideLabel: (event, facts) -> actions', () => {
  it.each<[string, LabelEvent, LabelFacts, Action[]]>([
    ['invalid config: reported on the issue', labeled(), { config: invalid }, [{ type: 'comment', issueNumber: 7, body: INVALID_CONFIG_BODY }]],
    ['invalid config on unlabel: reported too', unlabeled(), { config: invalid }, [{ type: 'comment', issueNumber: 7, body: INVALID_CONFIG_BODY }]],
    ['another label: ignored', labeled('bug'), { config: ok }, []],
    ['another label removed: ignored', unlabeled('bug'), { config: ok }, []],
    [
      'sender without write access: refused',
      labeled(),
      { config: ok, maySteer: false },
      [
        { type: 'comment', issueNumber: 7, body: REFUSED_BODY },
        { type: 'log', msg: 'refused: no write access', data: { sender: 'alice', type: 'labeled' } },
      ],
    ],
    ['new goal with a goal block: started, spec at acceptance', labeled(), { config: ok, maySteer: true, goal: undefined, running: false }, freshStart({ kind: 'spec' }, ['task-01', 'task-02'])],
    ['new goal without a block: a placeholder spec, plan none', labeled('goal', 'just words'), { config: ok, maySteer: true, goal: undefined, running: false }, freshStart({ kind: 'none' }, [])],
    [
      'new goal with an invalid block: placeholder, plan invalid',
      labeled('goal', INVALID_BLOCK),
      { config: ok, maySteer: true, goal: undefined, running: false },
      freshStart({ kind: 'invalid', errors: [expect.stringMatching(/task/)] }, []),
    ],
    ['resting goal: restarted', labeled(), { config: ok, maySteer: true, goal: goal('STOPPED'), running: false }, freshStart({ kind: 'spec' }, ['task-01', 'task-02'])],
    ['mid-way goal no worker runs: restarted', labeled(), { config: ok, maySteer: true, goal: goal('EXECUTING'), running: false }, freshStart({ kind: 'spec' }, ['task-01', 'task-02'])],
    [
      'running goal: a pause is overruled, a run follows, and the plan is left to that run (never changed under the loop)',
      labeled(),
      { config: ok, maySteer: true, goal: goal('EXECUTING'), running: true },
      [
        { type: 'setMeta', patch: { issuePlan: null } },
        { type: 'setControl', control: null },
        { type: 'schedule', mode: 'run', priority: 'P1' },
      ],
    ],
    [
      'merged goal: refused on the issue',
      labeled(),
      { config: ok, maySteer: true, goal: goal('LOOP_COMPLETE', { merged: true, prNumber: 9 }), running: false },
      [{ type: 'comment', issueNumber: 7, body: 'This goal is done: pull request #9 was merged. Open a new issue for more work.' }],
    ],
    ['label removed: the goal pauses', unlabeled(), { config: ok, maySteer: true, goal: goal('EXECUTING') }, pause],
    ['label removed from an issue without a goal: nothing', unlabeled(), { config: ok, maySteer: true, goal: undefined }, []],
  ])('%s', (_name, event, facts, actions) => {
    expect(decideLabel(event, facts).actions).toEqual(actions);
  });

  it('names the issue goal for the goal actions', () => {
    expect(decideLabel(labeled(), { config: ok, maySteer: true, goal: undefined, running: false }).key).toEqual(KEY);
    expect(decideLabel(unlabeled(), { config: ok, maySteer: true, goal: goal() }).key).toEqual(KEY);
  });
});
