import { describe, expect, it } from 'vitest';
import type { Action } from '../../../src/steering/decide/actions.js';
import { decideReview, type ReviewFacts } from '../../../src/steering/decide/review.js';
import type { GoalEvent } from '../../../src/steering/events.js';
import { goal as anyGoal, base, forkPull, GOAL_BLOCK, github, INVALID_CONFIG_BODY, invalid, KEY, ok, okWithGate, ownPull, REFUSED_BODY } from './fixtures.js';

type ReviewEvent = Extract<GoalEvent, { type: 'review' }>;
const review = (state = 'changes_requested', body: string | null = 'Please rename foo.', pull: typeof ownPull = ownPull): ReviewEvent => ({
  ...base,
  ...pull,
  type: 'review',
  reviewId: 31,
  state,
  body,
});
/** A goal whose recorded pull request is #9. */
const goal: typeof anyGoal = (state, meta = {}) => anyGoal(state, { prNumber: 9, ...meta });
const lineComment = { path: 'src/a.ts', line: 3, body: 'not like this' };
const asked = (g = goal('LOOP_COMPLETE', { prNumber: 9 }), more: Partial<ReviewFacts> = {}): ReviewFacts => ({ goal: g, maySteer: true, comments: [], config: ok, issueBody: GOAL_BLOCK, ...more });

describe('decideReview: (event, facts) -> actions', () => {
  it.each<[string, ReviewEvent, ReviewFacts, Action[]]>([
    ['not a goal branch: nothing', review(), { goal: undefined }, []],
    ['a fork whose branch is named like the goal branch: nothing, not even a refusal', review(undefined, undefined, forkPull), asked(), []],
    ['another pull request from the goal branch: nothing', review(undefined, undefined, { ...ownPull, prNumber: 10 }), asked(), []],
    [
      'reviewer without write access: refused on the pull request',
      review(),
      { goal: goal(), maySteer: false },
      [
        { type: 'comment', issueNumber: 9, body: REFUSED_BODY },
        { type: 'log', msg: 'refused: no write access', data: { sender: 'alice', type: 'review' } },
      ],
    ],
    ['a comment review with no line comments asks for nothing', review('commented'), asked(undefined, { comments: [] }), []],
    ['a review after the merge asks nothing', review(), asked(goal('LOOP_COMPLETE', { merged: true, prNumber: 9 })), []],
    ['invalid config: reported on the pull request', review(), asked(undefined, { config: invalid }), [{ type: 'comment', issueNumber: 9, body: INVALID_CONFIG_BODY }]],
  ])('%s', (_name, event, facts, actions) => {
    expect(decideReview(event, facts).actions).toEqual(actions);
  });

  it('changes requested: a task after the last one, verified like it, and a run', () => {
    const d = decideReview(review(), asked());
    expect(d.key).toEqual(KEY);
    const task = expect.objectContaining({ id: 'review-31', title: 'Address review 31 by alice', dependencies: ['task-02'], verification: 'npm run lint', risk: 'low', requires_approval: false });
    expect(d.actions).toEqual([
      { type: 'setMeta', patch: { extraTasks: [task] } },
      { type: 'addPendingReview', review: { taskId: 'review-31', prNumber: 9, reviewId: 31 } },
      {
        type: 'acceptPlan',
        branch: github.branch,
        spec: expect.objectContaining({ tasks: [expect.objectContaining({ id: 'task-01' }), expect.objectContaining({ id: 'task-02' }), task] }),
        issuePlan: { kind: 'spec' },
      },
      { type: 'setControl', control: null },
      { type: 'schedule', mode: 'run', priority: 'P1' },
    ]);
  });

  it("a comment review with line comments: they are quoted; the repository's gate verifies the task", () => {
    const d = decideReview(review('commented', null), asked(undefined, { comments: [lineComment], config: okWithGate }));
    const meta = d.actions[0];
    expect(meta?.type === 'setMeta' && meta.patch.extraTasks?.[0]).toMatchObject({ verification: 'npm test && npm run lint', description: expect.stringContaining('In `src/a.ts` line 3:') });
  });

  it('the same review again replaces its task; the pending list is appended to, never rewritten from what was read', () => {
    const earlier = { id: 'review-31', title: 'old', description: '', dependencies: [], run: [], verification: 'true', risk: 'low' as const, requires_approval: false };
    const d = decideReview(review(), asked(goal('LOOP_COMPLETE', { extraTasks: [earlier], pendingReviews: [{ taskId: 'review-20', prNumber: 9, reviewId: 20 }] })));
    const meta = d.actions[0];
    expect(meta?.type === 'setMeta' && meta.patch.extraTasks?.map((t) => t.title)).toEqual(['Address review 31 by alice']);
    expect(meta?.type === 'setMeta' && 'pendingReviews' in meta.patch).toBe(false);
    expect(d.actions[1]).toEqual({ type: 'addPendingReview', review: { taskId: 'review-31', prNumber: 9, reviewId: 31 } });
  });

  it('an issue that could not be read: the task is recorded, the plan is left to the worker', () => {
    const d = decideReview(review(), asked(undefined, { issueBody: undefined }));
    expect(d.actions.map((a) => a.type)).toEqual(['setMeta', 'addPendingReview', 'setMeta', 'setControl', 'schedule']);
    expect(d.actions[2]).toEqual({ type: 'setMeta', patch: { issuePlan: null } });
  });

  it('a goal without tasks: the review task depends on nothing and verifies with true', () => {
    const g = goal();
    const d = decideReview(review(), asked({ ...g, spec: { ...g.spec, tasks: [] } }, { issueBody: 'no block' }));
    const meta = d.actions[0];
    expect(meta?.type === 'setMeta' && meta.patch.extraTasks?.[0]).toMatchObject({ dependencies: [], verification: 'true' });
  });
});
