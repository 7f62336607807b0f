export const GOAL_STATES = [
  'INITIALIZING',
  'DECOMPOSING',
  'AWAITING_APPROVAL',
  'TASK_PENDING',
  'EXECUTING',
  'EVALUATING',
  'STATE_COMMIT',
  'REPAIR_LOOP',
  'ESCALATED',
  'FINAL_GATE',
  'LOOP_COMPLETE',
  'PAUSED',
  'STOPPED',
  'FAILED',
] as const;
export type GoalState = (typeof GOAL_STATES)[number];

/** States in which the loop is not running and waits for a human (or is finished). */
export const RESTING_STATES: ReadonlySet<GoalState> = new Set(['AWAITING_APPROVAL', 'ESCALATED', 'LOOP_COMPLETE', 'PAUSED', 'STOPPED', 'FAILED']);

export const TASK_STATUSES = ['pending', 'running', 'done', 'skipped', 'escalated', 'awaiting_approval'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export function isSettled(status: TaskStatus): boolean {
  return status === 'done' || status === 'skipped';
}
