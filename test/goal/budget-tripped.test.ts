import { describe, expect, it } from 'vitest';
import { budgetTripped, DEFAULT_LIMITS } from '../../src/goal/limits.js';

const limits = { ...DEFAULT_LIMITS, max_iterations: 3, cost_cap_usd: 2, max_wall_minutes: 1 };
const use = { iterations: 1, costUsd: 0, elapsedMs: 0 };

describe('budgetTripped: the one budget check', () => {
  it('lets the last allowed iteration begin, and stops the one after it', () => {
    expect(budgetTripped(limits, { ...use, iterations: 3 })).toBeUndefined();
    expect(budgetTripped(limits, { ...use, iterations: 4 })).toBe('max_iterations reached (3)');
  });

  it('stops at the cost cap, not below it, and never before any cost (a cap of 0 forbids model spend only)', () => {
    expect(budgetTripped(limits, { ...use, costUsd: 1.99 })).toBeUndefined();
    expect(budgetTripped(limits, { ...use, costUsd: 2 })).toBe('cost_cap_usd reached ($2.00 of $2)');
    expect(budgetTripped({ ...limits, cost_cap_usd: 0 }, use)).toBeUndefined();
  });

  it('stops when the wall clock reaches the cap', () => {
    expect(budgetTripped(limits, { ...use, elapsedMs: 59_999 })).toBeUndefined();
    expect(budgetTripped(limits, { ...use, elapsedMs: 60_000 })).toBe('max_wall_minutes reached (1)');
  });
});
