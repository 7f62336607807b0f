/**
 * Builders for unit tests: raw goal specs (as a user would write them) and pure-controller
 * states (TaskView / LoopState), so each test states only what matters to it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LIMITS, type LoopLimits } from '../../src/goal/limits.js';
import { initialState, type LoopCounters, type LoopState, type TaskView } from '../../src/loop/transition.js';

// ---------------------------------------------------------------------------------------------
// Raw specs

export interface RawTask {
  id: string;
  title: string;
  verification: string;
  dependencies?: string[];
  [key: string]: unknown;
}

/** A raw task object; `deps` are the ids it depends on. */
export function rawTask(id: string, deps: string[] = [], extra: Record<string, unknown> = {}): RawTask {
  return { id, title: `Title of ${id}`, dependencies: deps, verification: `test -f ${id}.done`, ...extra };
}

/** A raw spec object with the given tasks (default: one task `a`). */
export function rawSpec(tasks: RawTask[] = [rawTask('a')], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { objective: 'Reach the objective', tasks, ...extra };
}

// ---------------------------------------------------------------------------------------------
// The seed example

/** The seed's JSON goal example, copied byte for byte into the repository (see its README). */
export const SEED_GOAL_FILE = fileURLToPath(new URL('../fixtures/seed/goal-auth-migration-8841.json', import.meta.url));

/**
 * The seed's JSON goal example, verbatim: the balanced `{ ... }` object that contains
 * "goal-auth-migration-8841", without the newline that follows it in the seed.
 */
export function seedGoalJson(): string {
  const text = readFileSync(SEED_GOAL_FILE, 'utf8');
  if (!text.endsWith('}\n')) throw new Error(`${SEED_GOAL_FILE} does not end with "}" and one newline`);
  return text.slice(0, -1);
}

// ---------------------------------------------------------------------------------------------
// Controller states

export type TaskInput = Omit<TaskView, 'runAttempts' | 'runFailures'>;

/** A task as the controller sees it at the start of a run: pending, no attempts yet. */
export function view(id: string, deps: string[] = [], extra: Partial<TaskInput> = {}): TaskInput {
  return {
    id,
    title: `Title of ${id}`,
    dependencies: deps,
    risk: 'low',
    requiresApproval: false,
    approved: false,
    maxRetries: 3,
    status: 'pending',
    attempts: 0,
    ...extra,
  };
}

export function limits(overrides: Partial<LoopLimits> = {}): LoopLimits {
  return { ...DEFAULT_LIMITS, ...overrides };
}

export function stateOf(tasks: TaskInput[], opts: { limits?: Partial<LoopLimits>; startedAtMs?: number; counters?: Partial<LoopCounters> } = {}): LoopState {
  return initialState({
    tasks,
    limits: limits(opts.limits),
    startedAtMs: opts.startedAtMs ?? 0,
    ...(opts.counters ? { counters: opts.counters } : {}),
  });
}
