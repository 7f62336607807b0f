import { describe, expect, it } from 'vitest';
import { ceilingOf, checkWriteLimits, DEFAULT_WRITE_LIMITS, decideWrite, WRITE_PRIORITIES, type WriteLimits, type WritePriority } from '../../src/ports/write-budget.js';

const limits: WriteLimits = {
  windows: [
    { ms: 1000, max: 10 },
    { ms: 10_000, max: 40 },
  ],
  shares: { urgent: 1, normal: 0.8, background: 0.5 },
};
const decide = (nowMs: number, recentMs: number[], priority: WritePriority = 'urgent', pausedUntilMs = 0, l = limits) => decideWrite({ nowMs, pausedUntilMs, recentMs, priority, limits: l });
const times = (n: number, at: number) => Array.from({ length: n }, () => at);

describe('the write budget rule (decideWrite)', () => {
  it('takes a write while every window has room', () => {
    expect(decide(0, [])).toEqual({ take: true });
    expect(decide(5000, times(9, 4500))).toEqual({ take: true });
  });

  it('counts a write in a window while now < its time + the window, and says when the oldest that must leave has left', () => {
    const recent = [100, 200, 300, 400, 500, 600, 700, 800, 900, 950];
    expect(decide(1000, recent)).toEqual({ take: false, waitMs: 100 }); // 100 leaves at 1100
    expect(decide(1099, recent)).toEqual({ take: false, waitMs: 1 });
    expect(decide(1100, recent)).toEqual({ take: true });
    // Order does not matter.
    expect(decide(1000, [...recent].reverse())).toEqual({ take: false, waitMs: 100 });
  });

  it('holds the longer window too, waiting for the latest of the windows', () => {
    // 40 writes spread over 10 s, at most 4 a second: the second window is full, the first is not.
    const recent = Array.from({ length: 40 }, (_, i) => i * 250);
    expect(decide(9800, recent)).toEqual({ take: false, waitMs: 200 }); // the write at 0 leaves the 10 s window at 10 000
    expect(decide(9999, recent)).toEqual({ take: false, waitMs: 1 });
    expect(decide(10_000, recent)).toEqual({ take: true });
    // Both full: the later of the two.
    expect(decide(9800, [...recent.slice(0, 30), ...times(10, 9700)])).toEqual({ take: false, waitMs: 900 });
  });

  it('gives each priority a ceiling of its share of every window, so lower priorities are held back first', () => {
    expect(WRITE_PRIORITIES.map((p) => limits.windows.map((w) => ceilingOf(w, limits.shares[p])))).toEqual([
      [10, 40],
      [8, 32],
      [5, 20],
    ]);
    expect(decide(0, times(4, 0), 'background')).toEqual({ take: true });
    expect(decide(0, times(5, 0), 'background')).toEqual({ take: false, waitMs: 1000 });
    expect(decide(0, times(5, 0), 'normal')).toEqual({ take: true });
    expect(decide(0, times(8, 0), 'normal')).toEqual({ take: false, waitMs: 1000 });
    expect(decide(0, times(9, 0), 'urgent')).toEqual({ take: true });
    expect(decide(0, times(10, 0), 'urgent')).toEqual({ take: false, waitMs: 1000 });
  });

  it('makes a lower priority wait for more of the window to leave', () => {
    const recent = [0, 100, 200, 300, 400, 500, 600, 700];
    expect(decide(800, recent, 'normal')).toEqual({ take: false, waitMs: 200 }); // 8 → 7: the write at 0 leaves at 1000
    expect(decide(800, recent, 'background')).toEqual({ take: false, waitMs: 500 }); // 8 → 4: the one at 300 leaves at 1300
  });

  it('gives every priority a ceiling of at least one', () => {
    const tiny: WriteLimits = { windows: [{ ms: 1000, max: 1 }], shares: { urgent: 1, normal: 0.5, background: 0.1 } };
    expect(decide(0, [], 'background', 0, tiny)).toEqual({ take: true });
    expect(decide(0, [0], 'urgent', 0, tiny)).toEqual({ take: false, waitMs: 1000 });
  });

  it('holds every priority while the installation is paused, and waits for whichever ends later', () => {
    for (const p of WRITE_PRIORITIES) expect(decide(1000, [], p, 61_000)).toEqual({ take: false, waitMs: 60_000 });
    expect(decide(61_000, [], 'background', 61_000)).toEqual({ take: true });
    expect(decide(500, times(10, 0), 'urgent', 700)).toEqual({ take: false, waitMs: 500 });
    expect(decide(500, times(10, 0), 'urgent', 2000)).toEqual({ take: false, waitMs: 1500 });
  });

  it('never lets more than a window’s max through in any window, whatever the priorities asking', () => {
    // Deterministic pseudo-random arrivals: every write that is told "take" is recorded.
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const taken: number[] = [];
    for (let now = 0; now < 60_000; now += Math.floor(rand() * 40)) {
      const priority = WRITE_PRIORITIES[Math.floor(rand() * 3)]!;
      if (decide(now, taken, priority).take) taken.push(now);
    }
    for (const { ms, max } of limits.windows) {
      for (const t of taken) expect(taken.filter((u) => u >= t && u < t + ms).length).toBeLessThanOrEqual(max);
    }
    expect(taken.length).toBeGreaterThan(200); // the budget was used, not just refused
  });

  it('defaults to 70 a minute and 450 an hour, with the shares the port documents', () => {
    expect(checkWriteLimits(DEFAULT_WRITE_LIMITS)).toEqual({
      windows: [
        { ms: 60_000, max: 70 },
        { ms: 3_600_000, max: 450 },
      ],
      shares: { urgent: 1, normal: 0.8, background: 0.5 },
    });
  });

  it('refuses limits that make no sense', () => {
    expect(() => checkWriteLimits({ ...limits, windows: [{ ms: 0, max: 1 }] })).toThrow(/positive whole/);
    expect(() => checkWriteLimits({ ...limits, windows: [{ ms: 1000, max: 1.5 }] })).toThrow(/positive whole/);
    expect(() => checkWriteLimits({ ...limits, shares: { urgent: 1, normal: 0, background: 0 } })).toThrow(/fraction/);
    expect(() => checkWriteLimits({ ...limits, shares: { urgent: 1, normal: 0.5, background: 0.8 } })).toThrow(/must not rise/);
  });
});
