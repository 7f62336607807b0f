import { describe, expect, it } from 'vitest';
import { MemoryWriteBudget } from '../../src/ledger/memory-write-budget.js';
import { DEFAULT_MAX_WRITE_WAIT_MS, takeWrite, WriteBudgetTimeoutError } from '../../src/ports/take-write.js';
import { DEFAULT_WRITE_LIMITS, type WriteBudgetStore, type WriteDecision, type WriteLimits, type WriteRequest } from '../../src/ports/write-budget.js';

/** A store that answers from a script and records what it was asked. */
function scripted(answers: WriteDecision[]): WriteBudgetStore & { asked: WriteRequest[] } {
  const asked: WriteRequest[] = [];
  return {
    asked,
    tryTakeWrite: async (request) => {
      asked.push(request);
      return answers.shift() ?? { take: true };
    },
    pauseWrites: async () => undefined,
    trimWrites: async () => 0,
  };
}

const oneAnHour: WriteLimits = { windows: [{ ms: 3_600_000, max: 1 }], shares: { urgent: 1, normal: 1, background: 1 } };

describe('takeWrite', () => {
  it('asks again after each wait, since another process may have taken the freed slot', async () => {
    const store = scripted([
      { take: false, waitMs: 100 },
      { take: false, waitMs: 40 },
    ]);
    const slept: number[] = [];
    await takeWrite(store, 'i-1', 'normal', { sleep: async (ms) => void slept.push(ms), jitterMs: () => 7 });
    expect(slept).toEqual([107, 47]);
    expect(store.asked).toHaveLength(3);
    // Without a clock the store's own is used; the default limits are the port's.
    expect(store.asked[0]).toEqual({ installation: 'i-1', priority: 'normal', limits: DEFAULT_WRITE_LIMITS });
  });

  it('passes the caller’s clock as the decision time', async () => {
    const store = scripted([{ take: false, waitMs: 5 }]);
    let now = 1000;
    const sleep = async (ms: number) => {
      now += ms;
    };
    await takeWrite(store, 'i-1', 'urgent', { clock: () => now, sleep, jitterMs: () => 0 });
    expect(store.asked.map((r) => r.atMs)).toEqual([1000, 1005]);
  });

  it('counts every wait, jitter included, against the cap, and refuses before a wait that would pass it', async () => {
    const store = scripted([
      { take: false, waitMs: 300 },
      { take: false, waitMs: 300 },
    ]);
    const slept: number[] = [];
    const taking = takeWrite(store, 'i-1', 'background', { maxWaitMs: 600, sleep: async (ms) => void slept.push(ms), jitterMs: () => 50 });
    await expect(taking).rejects.toBeInstanceOf(WriteBudgetTimeoutError);
    await expect(taking).rejects.toMatchObject({ waitedMs: 350, neededMs: 350 });
    expect(slept).toEqual([350]);
    expect(DEFAULT_MAX_WRITE_WAIT_MS).toBeGreaterThan(3_600_000); // the longest default window fits
  });

  it('stops a real wait when aborted, with the signal’s reason', async () => {
    const budget = new MemoryWriteBudget();
    await takeWrite(budget, 'i-1', 'urgent', { limits: oneAnHour });
    const controller = new AbortController();
    const waiting = takeWrite(budget, 'i-1', 'urgent', { limits: oneAnHour, signal: controller.signal });
    controller.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
  });
});
