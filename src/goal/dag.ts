import type { TaskSpec } from './schema.js';

export interface SpecError {
  /** Where the problem is, e.g. `tasks[2].dependencies`; empty for whole-spec problems. */
  path: string;
  message: string;
  taskId?: string;
}

type TaskRef = Pick<TaskSpec, 'id' | 'dependencies'>;

/** Structural checks zod cannot express: unique ids, known dependencies, no cycles. */
export function validateGraph(tasks: readonly TaskRef[]): SpecError[] {
  const errors: SpecError[] = [];
  const firstIndex = new Map<string, number>();
  tasks.forEach((task, i) => {
    const prev = firstIndex.get(task.id);
    if (prev !== undefined) {
      errors.push({ path: `tasks[${i}].id`, taskId: task.id, message: `duplicate task id "${task.id}" (first at tasks[${prev}])` });
    } else {
      firstIndex.set(task.id, i);
    }
  });
  tasks.forEach((task, i) => {
    const seen = new Set<string>();
    for (const dep of task.dependencies) {
      if (dep === task.id) {
        errors.push({ path: `tasks[${i}].dependencies`, taskId: task.id, message: 'task depends on itself' });
      } else if (!firstIndex.has(dep)) {
        errors.push({ path: `tasks[${i}].dependencies`, taskId: task.id, message: `unknown task "${dep}"` });
      } else if (seen.has(dep)) {
        errors.push({ path: `tasks[${i}].dependencies`, taskId: task.id, message: `"${dep}" is listed twice` });
      }
      seen.add(dep);
    }
  });
  const cycle = findCycle(tasks);
  if (cycle) errors.push({ path: '', message: `dependency cycle: ${cycle.join(' -> ')}` });
  return errors;
}

/** Returns one cycle as a closed id path (`a -> b -> a`), or undefined. */
export function findCycle(tasks: readonly TaskRef[]): string[] | undefined {
  const deps = new Map(tasks.map((t) => [t.id, t.dependencies] as const));
  const color = new Map<string, 'grey' | 'black'>();
  const stack: string[] = [];
  const visit = (id: string): string[] | undefined => {
    color.set(id, 'grey');
    stack.push(id);
    for (const dep of deps.get(id) ?? []) {
      if (!deps.has(dep) || dep === id) continue;
      const c = color.get(dep);
      if (c === 'grey') return [...stack.slice(stack.indexOf(dep)), dep];
      if (c === undefined) {
        const found = visit(dep);
        if (found) return found;
      }
    }
    stack.pop();
    color.set(id, 'black');
    return undefined;
  };
  for (const t of tasks) {
    if (!color.has(t.id)) {
      const found = visit(t.id);
      if (found) return found;
    }
  }
  return undefined;
}

/** Spec order, but every task after its dependencies (stable Kahn's algorithm). */
export function executionOrder<T extends TaskRef>(tasks: readonly T[]): T[] {
  const done = new Set<string>();
  const order: T[] = [];
  const remaining = [...tasks];
  while (remaining.length > 0) {
    const idx = remaining.findIndex((t) => t.dependencies.every((d) => done.has(d)));
    if (idx < 0) throw new Error('executionOrder: graph has a cycle or unknown dependency');
    const [task] = remaining.splice(idx, 1) as [T];
    done.add(task.id);
    order.push(task);
  }
  return order;
}

/**
 * The next task to work: not yet settled, all dependencies satisfied; ties keep spec order.
 * `settled` holds tasks that are done or skipped.
 */
export function nextReadyTask<T extends TaskRef>(tasks: readonly T[], settled: ReadonlySet<string>, excluded: ReadonlySet<string> = new Set()): T | undefined {
  return tasks.find((t) => !settled.has(t.id) && !excluded.has(t.id) && t.dependencies.every((d) => settled.has(d)));
}

/** Every task that transitively depends on `rootId`. */
export function dependentsOf(tasks: readonly TaskRef[], rootId: string): Set<string> {
  const out = new Set<string>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const t of tasks) {
      if (out.has(t.id)) continue;
      if (t.dependencies.some((d) => d === rootId || out.has(d))) {
        out.add(t.id);
        grew = true;
      }
    }
  }
  return out;
}
