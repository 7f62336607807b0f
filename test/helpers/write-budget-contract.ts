import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { takeWrite, WriteBudgetTimeoutError } from '../../src/ports/take-write.js';
import type { WriteBudgetStore, WriteLimits, WritePriority } from '../../src/ports/write-budget.js';
import { VirtualTime } from './virtual-time.js';

export type ClosableBudget = WriteBudgetStore & { close(): Promise<void> };

/** Small windows, so a test fills them in a few dozen writes: 10 a second, 25 in ten seconds. */
const limits: WriteLimits = {
  windows: [
    { ms: 1000, max: 10 },
    { ms: 10_000, max: 25 },
  ],
  shares: { urgent: 1, normal: 0.8, background: 0.5 },
};
const T0 = Date.UTC(2026, 0, 1);
const INSTALLATION = 'installation:1';

/** Every window of `ms` holds at most `max` of `times` (a window starting at each write is enough to check). */
function busiestWindow(times: readonly number[], ms: number): number {
  return Math.max(0, ...times.map((t) => times.filter((u) => u >= t && u < t + ms).length));
}

/**
 * The write budget every store keeps (SQLite, PostgreSQL, the process-local one): one atomic
 * decision per write across connections, priorities held back in order, pauses, abort, trimming.
 * `open` returns a fresh, empty store; `openAgain` another connection to it (another process).
 * Time is virtual: the takers pass their decision time, and waits jump (test/helpers/virtual-time.ts).
 */
export function describeWriteBudgetContract(name: string, open: () => Promise<ClosableBudget>, openAgain: () => Promise<ClosableBudget>): void {
  describe(`${name} write budget contract`, () => {
    let store: ClosableBudget;
    const extra: ClosableBudget[] = [];
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      for (const s of extra.splice(0)) await s.close();
      await store.close();
    });
    const connections = async (n: number) => {
      const all = [store];
      for (let i = 1; i < n; i++) {
        const s = await openAgain();
        extra.push(s);
        all.push(s);
      }
      return all;
    };
    /** A store that records the time of every write it grants. */
    const recording = (s: WriteBudgetStore, taken: Array<{ at: number; priority: WritePriority }>): WriteBudgetStore => ({
      tryTakeWrite: async (request) => {
        const decision = await s.tryTakeWrite(request);
        if (decision.take) taken.push({ at: request.atMs!, priority: request.priority });
        return decision;
      },
      pauseWrites: (...args) => s.pauseWrites(...args),
      trimWrites: (...args) => s.trimWrites(...args),
    });
    const ask = (s: WriteBudgetStore, priority: WritePriority, atMs: number, installation = INSTALLATION) => s.tryTakeWrite({ installation, priority, limits, atMs });

    it('grants exactly a window’s max to writers racing on separate connections at one instant', async () => {
      const conns = await connections(3);
      const decisions = await Promise.all(conns.flatMap((s) => Array.from({ length: 8 }, () => ask(s, 'urgent', T0))));
      expect(decisions.filter((d) => d.take)).toHaveLength(10);
      expect(decisions.filter((d) => !d.take)).toEqual(Array.from({ length: 14 }, () => ({ take: false, waitMs: 1000 })));
    });

    it('never lets more than a window’s max through in any window, with takers waiting on three connections', async () => {
      const conns = await connections(3);
      const time = new VirtualTime(T0);
      const taken: Array<{ at: number; priority: WritePriority }> = [];
      const priorities: WritePriority[] = ['urgent', 'normal', 'background'];
      await time.run(
        conns.flatMap((s, i) =>
          Array.from({ length: 20 }, (_, j) => () => takeWrite(recording(s, taken), INSTALLATION, priorities[(i + j) % 3]!, { limits, clock: time.clock, sleep: time.sleep, jitterMs: () => 0 })),
        ),
      );
      const times = taken.map((t) => t.at);
      expect(times).toHaveLength(60);
      expect(busiestWindow(times, 1000)).toBeLessThanOrEqual(10);
      expect(busiestWindow(times, 10_000)).toBeLessThanOrEqual(25);
      // The budget was used, not just respected: the first second is full; 60 writes need two
      // ten-second windows and part of a third.
      expect(times.filter((t) => t === T0)).toHaveLength(10);
      expect(Math.max(...times)).toBeGreaterThanOrEqual(T0 + 20_000);
    });

    it('holds back background writes first, then normal ones, and urgent ones last', async () => {
      const [a, b] = await connections(2);
      const results: string[] = [];
      let k = 0;
      for (const priority of ['background', 'normal', 'urgent'] as const) {
        for (let i = 0; i < 6; i++, k++) {
          const d = await ask(k % 2 ? a! : b!, priority, T0 + 10 * k);
          results.push(`${priority[0]}${d.take ? '+' : '-'}`);
        }
      }
      // Background up to 5 of 10, normal up to 8, urgent all 10.
      expect(results.join(' ')).toBe('b+ b+ b+ b+ b+ b- n+ n+ n+ n- n- n- u+ u+ u- u- u- u-');
      // Lower priorities wait longer, for more of the window to leave (writes at +0 … +40, +60 … +80, +120, +130).
      const at = T0 + 200;
      expect([await ask(a!, 'urgent', at), await ask(a!, 'normal', at), await ask(a!, 'background', at)]).toEqual([
        { take: false, waitMs: 800 },
        { take: false, waitMs: 820 },
        { take: false, waitMs: 860 },
      ]);
    });

    it('decides for a caller whose clock lags at the latest write’s time, so its write cannot fill a window again', async () => {
      const [a, b] = await connections(2);
      for (let i = 0; i < 10; i++) expect(await ask(a!, 'urgent', T0 + 5000)).toEqual({ take: true });
      // At T0 the writes at T0 + 5 s would not count yet; it waits as if it were T0 + 5 s.
      expect(await ask(b!, 'urgent', T0)).toEqual({ take: false, waitMs: 1000 });
      // Ten writes at T0 are dropped by a write ten seconds later; a lagging caller's write at T0 + 1
      // would make eleven in that second. It is counted at the latest write's time instead.
      for (let i = 0; i < 10; i++) await ask(a!, 'urgent', T0 + 20_000);
      expect(await ask(a!, 'urgent', T0 + 30_000)).toEqual({ take: true });
      expect(await ask(b!, 'urgent', T0 + 20_001)).toEqual({ take: true });
      const more: boolean[] = [];
      for (let i = 0; i < 10; i++) more.push((await ask(a!, 'urgent', T0 + 30_000)).take);
      expect(more.filter(Boolean)).toHaveLength(8); // 10 a second, two of them taken at T0 + 30 s
    });

    it('pauses every write of the installation, from every connection, until the pause ends', async () => {
      const [a, b] = await connections(2);
      await a!.pauseWrites(INSTALLATION, 60_000, T0);
      await b!.pauseWrites(INSTALLATION, 5_000, T0 + 1000); // a shorter pause does not shorten it
      const time = new VirtualTime(T0 + 2000);
      const taken: Array<{ at: number; priority: WritePriority }> = [];
      const other: Array<{ at: number; priority: WritePriority }> = [];
      await time.run([
        ...(['urgent', 'normal', 'background'] as const).flatMap((p) =>
          [a!, b!].map((s) => () => takeWrite(recording(s, taken), INSTALLATION, p, { limits, clock: time.clock, sleep: time.sleep, jitterMs: () => 0 })),
        ),
        () => takeWrite(recording(b!, other), 'installation:2', 'background', { limits, clock: time.clock, sleep: time.sleep, jitterMs: () => 0 }),
      ]);
      // Two background writes may meet their ceiling (5 a second) when they decide last: one then waits a second more.
      expect(taken).toHaveLength(6);
      expect(Math.min(...taken.map((t) => t.at))).toBe(T0 + 60_000);
      expect(taken.filter((t) => t.priority !== 'background').map((t) => t.at)).toEqual(Array.from({ length: 4 }, () => T0 + 60_000));
      expect(other.map((t) => t.at)).toEqual([T0 + 2000]); // another installation is not paused
      // A longer pause extends it.
      await b!.pauseWrites(INSTALLATION, 120_000, T0 + 60_000);
      expect(await ask(a!, 'urgent', T0 + 61_000)).toEqual({ take: false, waitMs: 119_000 });
    });

    it('stops waiting when aborted, and a write aborted before its turn is never counted', async () => {
      const [a, b] = await connections(2);
      for (let i = 0; i < 10; i++) expect(await ask(a!, 'urgent', T0)).toEqual({ take: true });
      const controller = new AbortController();
      let fellAsleep = (): void => undefined;
      const asleep = new Promise<void>((resolve) => {
        fellAsleep = resolve;
      });
      const waiting = takeWrite(b!, INSTALLATION, 'urgent', {
        limits,
        clock: () => T0,
        signal: controller.signal,
        jitterMs: () => 0,
        // Sleeps until aborted: the budget never frees in this test.
        sleep: (_ms, signal) =>
          new Promise((_resolve, reject) => {
            signal!.addEventListener('abort', () => reject(signal!.reason), { once: true });
            fellAsleep();
          }),
      });
      await asleep;
      controller.abort(new Error('shutting down'));
      await expect(waiting).rejects.toThrow('shutting down');
      const already = AbortSignal.abort(new Error('gone'));
      await expect(takeWrite(b!, 'installation:3', 'urgent', { limits, clock: () => T0, signal: already })).rejects.toThrow('gone');
      // Neither was counted: installation 3 still has its whole second, installation 1 its next one.
      for (let i = 0; i < 10; i++) expect(await ask(a!, 'urgent', T0 + 1000)).toEqual({ take: true });
      for (let i = 0; i < 10; i++) expect(await ask(a!, 'urgent', T0, 'installation:3')).toEqual({ take: true });
      expect(await ask(a!, 'urgent', T0, 'installation:3')).toMatchObject({ take: false });
    });

    it('refuses, without waiting, a write that would wait longer than the caller allows', async () => {
      for (let i = 0; i < 10; i++) await ask(store, 'urgent', T0);
      let slept = 0;
      const refused = takeWrite(store, INSTALLATION, 'urgent', {
        limits,
        clock: () => T0 + 200,
        maxWaitMs: 500,
        jitterMs: () => 0,
        sleep: async () => {
          slept++;
        },
      });
      await expect(refused).rejects.toBeInstanceOf(WriteBudgetTimeoutError);
      await expect(refused).rejects.toMatchObject({ installation: INSTALLATION, priority: 'urgent', waitedMs: 0, neededMs: 800 });
      expect(slept).toBe(0);
    });

    it('drops writes older than the longest window as it goes, and all old ones when trimmed', async () => {
      for (let i = 0; i < 5; i++) await ask(store, 'urgent', T0, 'quiet');
      for (let i = 0; i < 3; i++) await ask(store, 'urgent', T0, 'busy');
      expect(await ask(store, 'urgent', T0 + 10_000, 'busy')).toEqual({ take: true }); // drops busy's three
      expect(await store.trimWrites(10_000, T0 + 10_000)).toBe(0); // at the edge: not older than 10 s
      expect(await store.trimWrites(5_000, T0 + 10_000)).toBe(5); // quiet's five
      expect(await store.trimWrites(0, T0 + 10_001)).toBe(1); // busy's latest
      // A trimmed write no longer counts.
      for (let i = 0; i < 10; i++) expect(await ask(store, 'urgent', T0 + 10_001, 'quiet')).toEqual({ take: true });
    });
  });
}
