import type { GoalState } from '../goal/states.js';

export const STATE_LABELS = ['goal:planning', 'goal:awaiting-approval', 'goal:running', 'goal:paused', 'goal:escalated', 'goal:review', 'goal:done', 'goal:stopped'] as const;
export type StateLabel = (typeof STATE_LABELS)[number];

/** The label a goal shows: its state's, except that a merged pull request means done, whatever the state. */
export function labelForGoal(state: GoalState, merged = false): StateLabel {
  return merged ? 'goal:done' : labelForState(state);
}

export function labelForState(state: GoalState): StateLabel {
  switch (state) {
    case 'INITIALIZING':
    case 'DECOMPOSING':
      return 'goal:planning';
    case 'AWAITING_APPROVAL':
      return 'goal:awaiting-approval';
    case 'PAUSED':
      return 'goal:paused';
    case 'ESCALATED':
      return 'goal:escalated';
    case 'LOOP_COMPLETE':
      return 'goal:review';
    case 'STOPPED':
    case 'FAILED':
      return 'goal:stopped';
    default:
      return 'goal:running';
  }
}

/** P0 (most urgent) to P3 from an issue's labels; P2 when none. */
export function priorityFromLabels(labels: ReadonlyArray<{ name?: string } | string>): string {
  const names = labels.map((l) => (typeof l === 'string' ? l : (l.name ?? '')));
  for (const p of ['P0', 'P1', 'P2', 'P3']) if (names.some((n) => n.toUpperCase() === p || n.toUpperCase().startsWith(`${p}:`) || n.toUpperCase().startsWith(`${p} `))) return p;
  return 'P2';
}
