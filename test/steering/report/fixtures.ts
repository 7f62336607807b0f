import type { Evidence } from '../../../src/goal/evidence.js';
import type { GoalSnapshot, TaskSnapshot } from '../../../src/goal/result.js';
import { NO_USAGE } from '../../../src/goal/usage.js';
import type { AttemptEntry, AttemptLogEntry, BaselineEntry, CheckpointEntry } from '../../../src/ports/attempt-log.js';

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

const USAGE = { input: 0, output: 0, cache_read: 0, cache_write: 0 };
export const SHA = {
  api: 'a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1',
  refactor: 'b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2',
  ui: 'c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3',
  docs: 'd4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4',
  old: 'e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5',
};

export function baselineEntry(passed: boolean, expect: 'red' | 'green' = 'red', over: Partial<BaselineEntry> = {}): BaselineEntry {
  return {
    kind: 'baseline',
    command: 'npm test',
    exitCode: passed ? 0 : 1,
    durationMs: 1200,
    timedOut: false,
    passed,
    tail: passed ? 'ok' : 'FAIL src/api.test.ts\nexpected 200, got 404',
    expect,
    policy: 'warn',
    ...over,
  };
}

/**
 * A goal whose tasks show each kind of evidence: `api` red → green; `refactor` green → green as it
 * expects (`expect: green`); `ui` green → green though it expects red (the warning); `docs`
 * unchecked (baseline off); `old` a checkpoint from before evidence; `strict` escalated at once
 * (`require_red`, its verification passed before it ran); `next` pending, nothing recorded.
 */
export function evidenceGoal(): { s: GoalSnapshot; rows: AttemptLogEntry[] } {
  const s = snapshot([
    { id: 'api', title: 'Add the API', status: 'done', attempts: 1, checkpointSha: SHA.api },
    { id: 'refactor', title: 'Split the module', status: 'done', attempts: 1, checkpointSha: SHA.refactor },
    { id: 'ui', title: 'Build the UI', status: 'done', attempts: 2, checkpointSha: SHA.ui },
    { id: 'docs', title: 'Write docs', status: 'done', attempts: 1, checkpointSha: SHA.docs },
    { id: 'old', title: 'From before', status: 'done', attempts: 1, checkpointSha: SHA.old },
    { id: 'strict', title: 'Strict one', status: 'escalated', attempts: 1 },
    { id: 'next', title: 'Later', status: 'pending' },
  ]);
  const verify: AttemptEntry = { kind: 'verify', command: 'npm test', exitCode: 0, durationMs: 900, timedOut: false, passed: true, tail: 'ok' };
  const cp = (sha: string, evidence?: Evidence): CheckpointEntry => ({ kind: 'checkpoint', sha, files: 1, insertions: 3, deletions: 1, stat: 'src/x.ts +3 -1', ...(evidence ? { evidence } : {}) });
  const end = (outcome: 'passed' | 'failed', reason: string): AttemptEntry => ({ kind: 'end', outcome, reason, tokens: USAGE, costUsd: 0.1, durationMs: 2000 });
  const list: [string, number, AttemptEntry][] = [
    ['api', 1, baselineEntry(false)],
    ['api', 1, verify],
    ['api', 1, cp(SHA.api, 'red->green')],
    ['api', 1, end('passed', '1 file(s) changed, +3 -1')],
    ['refactor', 1, baselineEntry(true, 'green', { reused: true })],
    ['refactor', 1, verify],
    ['refactor', 1, cp(SHA.refactor, 'green->green')],
    ['refactor', 1, end('passed', '1 file(s) changed, +3 -1')],
    ['ui', 1, baselineEntry(true, 'red')],
    ['ui', 1, { ...verify, passed: false, exitCode: 1, tail: 'lint failed' }],
    ['ui', 1, end('failed', 'verification failed')],
    ['ui', 2, verify],
    ['ui', 2, cp(SHA.ui, 'green->green')],
    ['ui', 2, end('passed', '1 file(s) changed, +3 -1')],
    ['docs', 1, verify],
    ['docs', 1, cp(SHA.docs, 'unchecked')],
    ['docs', 1, end('passed', '1 file(s) changed, +3 -1')],
    ['old', 1, verify],
    ['old', 1, cp(SHA.old)],
    ['old', 1, end('passed', '1 file(s) changed, +3 -1')],
    ['strict', 1, baselineEntry(true, 'red', { policy: 'require_red' })],
    ['strict', 1, end('failed', 'its verification passed before the task ran (verification_baseline: require_red)')],
  ];
  return { s, rows: list.map(([taskId, attempt, entry], i) => ({ seq: i + 1, at: '2026-12-02T09:00:00.000Z', taskId, attempt, entry })) };
}
