import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, effectiveLimits, LimitsSchema, loosenedKeys, resolveLimits, riskExceeds } from '../../src/goal/limits.js';
import { RISK_LEVELS } from '../../src/goal/schema.js';

describe('DEFAULT_LIMITS', () => {
  it('has a value for every safeguard, matching the documented defaults', () => {
    expect(DEFAULT_LIMITS).toEqual({
      max_iterations: 50,
      max_retries: 3,
      error_threshold: 3,
      cost_cap_usd: 10,
      max_wall_minutes: 120,
      task_timeout_s: 600,
      max_turns: 100,
      max_same_failure: 2,
      max_risk: 'high',
    });
  });

  it('cannot be changed by accident', () => {
    expect(Object.isFrozen(DEFAULT_LIMITS)).toBe(true);
  });
});

describe('resolveLimits', () => {
  it('gives the defaults without layers', () => {
    expect(resolveLimits()).toEqual(DEFAULT_LIMITS);
    expect(resolveLimits(undefined, undefined)).toEqual(DEFAULT_LIMITS);
  });

  it('later layers win: defaults < repo config < goal spec', () => {
    const repo = { max_retries: 5, cost_cap_usd: 2, max_risk: 'medium' as const };
    const spec = { max_retries: 2, max_iterations: 9 };
    expect(resolveLimits(repo, spec)).toEqual({ ...DEFAULT_LIMITS, max_retries: 2, cost_cap_usd: 2, max_risk: 'medium', max_iterations: 9 });
  });

  it('an undefined value in a layer does not erase a lower layer', () => {
    expect(resolveLimits({ max_retries: 5 }, { max_retries: undefined }).max_retries).toBe(5);
  });

  it('keeps a zero cost cap (spend nothing)', () => {
    expect(resolveLimits({ cost_cap_usd: 0 }).cost_cap_usd).toBe(0);
  });

  it('returns a fresh object and leaves the defaults alone', () => {
    const a = resolveLimits({ max_retries: 7 });
    a.max_iterations = 1;
    expect(resolveLimits().max_iterations).toBe(50);
    expect(DEFAULT_LIMITS.max_retries).toBe(3);
  });
});

describe('max_turns', () => {
  it('is a limit like the others: the spec may only lower what the repo config allows', () => {
    expect(effectiveLimits({ max_turns: 30 }, { max_turns: 10 }).max_turns).toBe(10);
    expect(effectiveLimits({ max_turns: 30 }, { max_turns: 60 }).max_turns).toBe(30);
    expect(effectiveLimits(undefined, { max_turns: 500 }).max_turns).toBe(100);
    expect(loosenedKeys(resolveLimits({ max_turns: 30 }), { max_turns: 60 })).toEqual(['max_turns']);
    expect(LimitsSchema.safeParse({ max_turns: 0 }).success).toBe(false);
    expect(LimitsSchema.safeParse({ max_turns: 2.5 }).success).toBe(false);
  });
});

describe('riskExceeds', () => {
  it('orders low < medium < high < critical', () => {
    expect(RISK_LEVELS).toEqual(['low', 'medium', 'high', 'critical']);
    for (const [i, risk] of RISK_LEVELS.entries()) {
      for (const [j, max] of RISK_LEVELS.entries()) {
        expect(riskExceeds(risk, max), `${risk} > ${max}`).toBe(i > j);
      }
    }
  });
});
