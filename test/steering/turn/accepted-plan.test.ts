import { describe, expect, it } from 'vitest';
import type { GoalSpec, TaskSpec } from '../../../src/goal/schema.js';
import { acceptedPlan } from '../../../src/steering/turn/accepted-plan.js';

const task = (id: string, dependencies: string[] = []): TaskSpec => ({ id, title: id, dependencies, run: [], verification: 'true', risk: 'low', requires_approval: false }) as TaskSpec;
const spec = (tasks: TaskSpec[]): GoalSpec => ({ goal_id: '7', objective: 'Do it', constraints: [], acceptance_criteria: [], tasks }) as GoalSpec;

const ledger = spec([task('task-01'), task('review-9', ['task-01'])]);
const planned = spec([task('p-1')]);

describe('acceptedPlan', () => {
  const table: [string, Parameters<typeof acceptedPlan>, ReturnType<typeof acceptedPlan>][] = [
    ['no issuePlan (accepted by an older release): read the issue', [undefined, ledger, '7', undefined, undefined], undefined],
    ['a goal block: the ledger spec', [{ kind: 'spec' }, ledger, '7', [task('review-9', ['task-01'])], undefined], { plan: { kind: 'spec', spec: ledger }, hasBlock: true }],
    ['a goal block wins over a plan Claude wrote', [{ kind: 'spec' }, ledger, '7', undefined, planned], { plan: { kind: 'spec', spec: ledger }, hasBlock: true }],
    ['a review task missing from the ledger spec: read the issue', [{ kind: 'spec' }, ledger, '7', [task('review-10')], undefined], undefined],
    ['an invalid block: its errors', [{ kind: 'invalid', errors: ['tasks: required'] }, ledger, '7', undefined, undefined], { plan: { kind: 'invalid', errors: ['tasks: required'] }, hasBlock: true }],
    ['no block, no plan written: none', [{ kind: 'none' }, ledger, '7', undefined, undefined], { plan: { kind: 'none' }, hasBlock: false }],
  ];
  it.each(table)('%s', (_name, args, expected) => {
    expect(acceptedPlan(...args)).toEqual(expected);
  });

  it('no block, a plan Claude wrote: that plan, with the reviews’ tasks', () => {
    const got = acceptedPlan({ kind: 'none' }, ledger, '7', [task('review-9', ['p-1'])], planned);
    expect(got?.hasBlock).toBe(false);
    expect(got?.plan.kind).toBe('spec');
    expect(got?.plan.kind === 'spec' && got.plan.spec.tasks.map((t) => t.id)).toEqual(['p-1', 'review-9']);
    expect(got?.plan.kind === 'spec' && got.plan.spec.goal_id).toBe('7');
  });
});
