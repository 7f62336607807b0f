import type { GoalKey } from '../ports/goal-ledger.js';

/** runGoal let go of a goal on request; its state in the ledger is the last one it wrote. */
export class GoalAbandonedError extends Error {
  constructor(readonly key: GoalKey) {
    super(`goal ${key.goalId} in ${key.repo} was abandoned by this worker`);
    this.name = 'GoalAbandonedError';
  }
}
