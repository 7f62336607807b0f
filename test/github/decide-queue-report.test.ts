import { describe, expect, it } from 'vitest';
import { DEFAULT_QUEUE_REPORT_POLICY, decideQueueReport, type QueuedGoalFact } from '../../src/github/decide-queue-report.js';

const key = (n: number) => ({ repo: 'o/r', goalId: `gh-${n}` });
const at = '2026-12-02T03:00:00.000Z';
const waiting = (n: number, position: number, shownAt?: number, waitedMs = 10_000): QueuedGoalFact => ({
  key: key(n),
  position,
  waitedMs,
  shown: shownAt === undefined ? undefined : { position: shownAt, at },
});

describe('decideQueueReport', () => {
  it('says a goal waits once it has waited the least time, and never for a goal a worker takes at once', () => {
    const actions = decideQueueReport({ queued: [waiting(1, 1, undefined, 1999), waiting(2, 2, undefined, 2000), waiting(3, 3, undefined, 60_000)], stale: [], refreshAllowance: 0 });
    expect(actions).toEqual([
      { type: 'showQueued', key: key(2), position: 2, priority: 'normal' },
      { type: 'showQueued', key: key(3), position: 3, priority: 'normal' },
    ]);
    expect(DEFAULT_QUEUE_REPORT_POLICY.minWaitMs).toBe(2000);
  });

  it('shows every waiting goal, however small the refresh allowance: a first showing is not a refresh', () => {
    const queued = Array.from({ length: 30 }, (_, i) => waiting(i + 1, i + 1));
    expect(decideQueueReport({ queued, stale: [], refreshAllowance: 0 }).filter((a) => a.type === 'showQueued')).toHaveLength(30);
  });

  it('refreshes moved positions within the allowance, the most misleading first, at background priority', () => {
    const queued = [
      waiting(1, 1, 2), // shown 2, now 1: half the shown wait is gone
      waiting(2, 2, 3), // a third
      waiting(3, 3, 3), // unchanged: never refreshed
      waiting(4, 4, 8), // half, further back than goal 1
      waiting(5, 9, 10), // a tenth
    ];
    const actions = decideQueueReport({ queued, stale: [], refreshAllowance: 3 });
    expect(actions).toEqual([
      { type: 'refreshPosition', key: key(1), position: 1, priority: 'background' },
      { type: 'refreshPosition', key: key(4), position: 4, priority: 'background' },
      { type: 'refreshPosition', key: key(2), position: 2, priority: 'background' },
    ]);
    expect(decideQueueReport({ queued, stale: [], refreshAllowance: 0 })).toEqual([]);
    expect(decideQueueReport({ queued, stale: [], refreshAllowance: -1 })).toEqual([]);
    expect(decideQueueReport({ queued, stale: [], refreshAllowance: 99 })).toHaveLength(4);
  });

  it('puts a goal’s state back only after it was missed in two reports in a row (a claimed job is in neither place for a moment)', () => {
    const shown = { position: 2, at };
    expect(decideQueueReport({ queued: [], stale: [{ key: key(1), shown, missedReports: 1 }], refreshAllowance: 5 })).toEqual([]);
    expect(decideQueueReport({ queued: [], stale: [{ key: key(1), shown, missedReports: 2 }], refreshAllowance: 0 })).toEqual([{ type: 'showState', key: key(1) }]);
  });
});
