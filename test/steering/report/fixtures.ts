import type { GoalSnapshot, TaskSnapshot } from '../../../src/goal/result.js';
import { NO_USAGE } from '../../../src/goal/usage.js';

/** A goal's snapshot with these tasks (pending, no attempts unless given), as the renderers get it. */
export function snapshot(tasks: Array<Partial<TaskSnapshot> & { id: string }>): GoalSnapshot {
  return {
    goalId: '7',
    objective: 'o',
    repo: 'octo-org/widgets',
    branch: 'goal/7-o',
    state: 'ESCALATED',
    tasks: tasks.map((t) => ({ title: t.id, dependencies: [], status: 'pending', attempts: 0, ...t })),
    startedAt: 0,
    iterations: 3,
    tokens: { ...NO_USAGE },
    costUsd: 0,
    limits: { max_iterations: 50, cost_cap_usd: 5 } as GoalSnapshot['limits'],
  };
}
