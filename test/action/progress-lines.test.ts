import { describe, expect, it } from 'vitest';
import { progressPrinter } from '../../src/action/progress-lines.js';
import type { GoalSnapshot } from '../../src/goal/result.js';

const snap = (state: GoalSnapshot['state'], tasks: [string, string, number][], title = 'T'): GoalSnapshot =>
  ({ goalId: '7', state, tasks: tasks.map(([id, status, attempts]) => ({ id, title, status, attempts, dependencies: [] })) }) as unknown as GoalSnapshot;

describe("the job log's live task list", () => {
  it('prints a line when a task or the goal changes, and nothing when nothing did', () => {
    const lines: string[] = [];
    const p = progressPrinter((l) => lines.push(l));
    p(
      snap('EXECUTING', [
        ['a', 'running', 1],
        ['b', 'pending', 0],
      ]),
    );
    p(
      snap('EXECUTING', [
        ['a', 'running', 1],
        ['b', 'pending', 0],
      ]),
    );
    p(
      snap('EXECUTING', [
        ['a', 'done', 1],
        ['b', 'running', 1],
      ]),
    );
    expect(lines).toEqual(['goal-loop: goal 7 is EXECUTING', 'goal-loop:   a T: running, attempt 1', 'goal-loop:   a T: done, attempt 1', 'goal-loop:   b T: running, attempt 1']);
  });

  it('keeps an untrusted title on its one line: it can never start a workflow command', () => {
    const lines: string[] = [];
    progressPrinter((l) => lines.push(l))(snap('EXECUTING', [['a', 'running', 1]], 'x\n::add-mask::oops\r\n::error::forged'));
    expect(lines.every((l) => !l.includes('\n') && !l.includes('\r') && l.startsWith('goal-loop:'))).toBe(true);
  });

  it('prints setup as each command starts and when it ends, before the tasks', () => {
    const lines: string[] = [];
    const p = progressPrinter((l) => lines.push(l));
    const at = (setup: GoalSnapshot['setup']) => ({ ...snap('INITIALIZING', [['a', 'pending', 0]]), setup });
    p(at({ status: 'running', command: 'npm ci', startedAt: 0 }));
    p(at({ status: 'running', command: 'npm ci', startedAt: 0 }));
    p(at({ status: 'running', command: 'npm run build\n::error::forged', startedAt: 0 }));
    p(at({ status: 'done', command: 'npm run build', startedAt: 0, durationMs: 14_000 }));
    expect(lines).toEqual([
      'goal-loop: goal 7 is INITIALIZING',
      'goal-loop:   setup running: npm ci',
      'goal-loop:   setup running: npm run build ::error::forged',
      'goal-loop:   setup done in 14.0 s: npm run build',
    ]);
  });
});
