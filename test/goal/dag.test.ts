import { describe, expect, it } from 'vitest';
import { dependentsOf, executionOrder, findCycle, nextReadyTask, validateGraph } from '../../src/goal/dag.js';

const t = (id: string, ...dependencies: string[]) => ({ id, dependencies });
const ids = (tasks: Array<{ id: string }>) => tasks.map((x) => x.id);

describe('validateGraph', () => {
  it('accepts a valid DAG', () => {
    expect(validateGraph([t('a'), t('b', 'a'), t('c', 'a'), t('d', 'b', 'c')])).toEqual([]);
  });

  it('finds duplicates, unknown dependencies, self-dependencies and cycles, each with path and task id', () => {
    const errors = validateGraph([t('a', 'ghost'), t('a'), t('s', 's'), t('x', 'y'), t('y', 'x')]);
    expect(errors).toContainEqual(expect.objectContaining({ path: 'tasks[1].id', taskId: 'a' }));
    expect(errors).toContainEqual(expect.objectContaining({ path: 'tasks[0].dependencies', taskId: 'a', message: 'unknown task "ghost"' }));
    expect(errors).toContainEqual(expect.objectContaining({ path: 'tasks[2].dependencies', taskId: 's' }));
    expect(errors).toContainEqual(expect.objectContaining({ message: 'dependency cycle: x -> y -> x' }));
    expect(errors).toHaveLength(4);
  });

  it('a self-dependency is reported once, not also as a cycle', () => {
    const errors = validateGraph([t('a', 'a')]);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).not.toMatch(/cycle/);
  });
});

describe('findCycle', () => {
  it('returns undefined for a DAG', () => {
    expect(findCycle([t('a'), t('b', 'a'), t('c', 'a', 'b')])).toBeUndefined();
  });

  it('returns a closed path of the ids in the cycle', () => {
    const cycle = findCycle([t('a', 'c'), t('b', 'a'), t('c', 'b')]);
    expect(cycle).toBeDefined();
    expect(cycle).toHaveLength(4);
    expect(cycle![0]).toBe(cycle![3]);
    expect(new Set(cycle)).toEqual(new Set(['a', 'b', 'c']));
  });

  it('finds a cycle that the first tasks do not reach, and leaves out tasks that only lead into it', () => {
    const cycle = findCycle([t('a'), t('b', 'a'), t('entry', 'p'), t('p', 'q'), t('q', 'p')]);
    expect(cycle).toBeDefined();
    expect(new Set(cycle)).toEqual(new Set(['p', 'q']));
  });

  it('ignores unknown dependencies (they are reported separately)', () => {
    expect(findCycle([t('a', 'nope'), t('b', 'a')])).toBeUndefined();
  });
});

describe('executionOrder', () => {
  it('keeps spec order when it is already valid', () => {
    expect(ids(executionOrder([t('a'), t('b', 'a'), t('c', 'b')]))).toEqual(['a', 'b', 'c']);
  });

  it('puts every task after its dependencies, breaking ties by spec order', () => {
    const order = ids(executionOrder([t('c', 'b'), t('a'), t('b', 'a'), t('z'), t('d', 'a')]));
    expect(order).toEqual(['a', 'b', 'c', 'z', 'd']);
  });

  it('orders a diamond', () => {
    expect(ids(executionOrder([t('join', 'l', 'r'), t('r', 'root'), t('l', 'root'), t('root')]))).toEqual(['root', 'r', 'l', 'join']);
  });

  it('returns every task exactly once', () => {
    const tasks = [t('e', 'd'), t('d', 'c'), t('c', 'b'), t('b', 'a'), t('a')];
    const order = ids(executionOrder(tasks));
    expect(order).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('throws on a cycle instead of looping', () => {
    expect(() => executionOrder([t('a', 'b'), t('b', 'a')])).toThrow();
  });
});

describe('nextReadyTask', () => {
  const tasks = [t('a'), t('b', 'a'), t('c'), t('d', 'b', 'c')];

  it('picks the first task in spec order whose dependencies are all settled', () => {
    expect(nextReadyTask(tasks, new Set())?.id).toBe('a');
    expect(nextReadyTask(tasks, new Set(['a']))?.id).toBe('b');
    expect(nextReadyTask(tasks, new Set(['a', 'b']))?.id).toBe('c');
    expect(nextReadyTask(tasks, new Set(['a', 'b', 'c']))?.id).toBe('d');
  });

  it('skips a blocked task even if it comes first in the spec', () => {
    expect(nextReadyTask([t('late', 'early'), t('early'), t('other')], new Set())?.id).toBe('early');
  });

  it('does not pick a task whose dependencies are only partly settled', () => {
    expect(nextReadyTask([t('d', 'b', 'c'), t('b'), t('c')], new Set(['b']))?.id).toBe('c');
  });

  it('returns undefined when everything is settled, or nothing is ready', () => {
    expect(nextReadyTask(tasks, new Set(['a', 'b', 'c', 'd']))).toBeUndefined();
    expect(nextReadyTask([t('a', 'x')], new Set())).toBeUndefined();
  });

  it('never picks an excluded task, nor tasks waiting on it', () => {
    expect(nextReadyTask(tasks, new Set(), new Set(['a']))?.id).toBe('c');
    expect(nextReadyTask(tasks, new Set(['c']), new Set(['a']))).toBeUndefined();
  });

  it('returns the task object itself', () => {
    const rich = [{ id: 'x', dependencies: [], title: 'X' }];
    expect(nextReadyTask(rich, new Set())).toBe(rich[0]);
  });
});

describe('dependentsOf', () => {
  it('returns every task that depends on the root, transitively, and nothing else', () => {
    const tasks = [t('a'), t('b', 'a'), t('c', 'b'), t('d'), t('e', 'd', 'c'), t('f', 'd')];
    expect(dependentsOf(tasks, 'a')).toEqual(new Set(['b', 'c', 'e']));
    expect(dependentsOf(tasks, 'd')).toEqual(new Set(['e', 'f']));
    expect(dependentsOf(tasks, 'e')).toEqual(new Set());
  });

  it('finds dependents listed before their dependency in the spec', () => {
    expect(dependentsOf([t('z', 'y'), t('y', 'x'), t('x')], 'x')).toEqual(new Set(['y', 'z']));
  });
});
