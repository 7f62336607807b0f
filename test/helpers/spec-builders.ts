/**
 * Builders for unit tests: raw goal specs (as a user would write them) and pure-controller
 * states (TaskView / LoopState), so each test states only what matters to it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_LIMITS, type LoopLimits } from '../../src/config/limits.js';
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

export const SEEDS_DIR = '/work/shared/seeds';

/** The text of `seeds/000_*.txt`. */
export function seedText(): string {
  const name = readdirSync(SEEDS_DIR).find((f) => /^000_.*\.txt$/.test(f));
  if (!name) throw new Error(`no 000_*.txt seed in ${SEEDS_DIR}`);
  return readFileSync(join(SEEDS_DIR, name), 'utf8');
}

/**
 * The seed's JSON goal example, verbatim: the balanced `{ ... }` object that starts at the first
 * line consisting of `{` and contains "goal-auth-migration-8841".
 */
export function seedGoalJson(): string {
  const text = seedText();
  let from = 0;
  for (;;) {
    const start = text.indexOf('\n{', from);
    if (start < 0) throw new Error('no JSON object in the seed');
    const open = start + 1;
    const end = matchingBrace(text, open);
    const candidate = text.slice(open, end + 1);
    if (candidate.includes('goal-auth-migration-8841')) return candidate;
    from = end + 1;
  }
}

function matchingBrace(text: string, open: number): number {
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  throw new Error('unbalanced braces in the seed');
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

export function stateOf(
  tasks: TaskInput[],
  opts: { limits?: Partial<LoopLimits>; startedAtMs?: number; counters?: Partial<LoopCounters> } = {},
): LoopState {
  return initialState({
    tasks,
    limits: limits(opts.limits),
    startedAtMs: opts.startedAtMs ?? 0,
    ...(opts.counters ? { counters: opts.counters } : {}),
  });
}
