import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/goal/limits.js';
import { effectiveLimits, liveBudgetTripped, loosenedKeys, safeguardOf } from '../../src/mcp/limits-policy.js';
import { hostEnv } from '../../src/sandbox/host-env.js';

describe('limits of an externally driven goal', () => {
  it('lets the spec tighten the repo config, never loosen it; goal_config changes apply as given', () => {
    const limits = effectiveLimits({ max_iterations: 10, cost_cap_usd: 2, max_risk: 'medium' }, { max_iterations: 99, cost_cap_usd: 1, max_risk: 'critical', max_retries: 2 });
    expect(limits).toMatchObject({ max_iterations: 10, cost_cap_usd: 1, max_risk: 'medium', max_retries: 2, error_threshold: DEFAULT_LIMITS.error_threshold });
    expect(effectiveLimits({}, { max_risk: 'low' }, { max_iterations: 70 })).toMatchObject({ max_risk: 'low', max_iterations: 70 });
  });

  it('names what a change loosens', () => {
    expect(loosenedKeys({ ...DEFAULT_LIMITS }, { max_iterations: 51, cost_cap_usd: 1, max_risk: 'critical' })).toEqual(['max_iterations', 'max_risk']);
    expect(loosenedKeys({ ...DEFAULT_LIMITS }, { max_iterations: 50, max_risk: 'low' })).toEqual([]);
  });

  it("checks the live budgets with the transition function's own words", () => {
    const l = { ...DEFAULT_LIMITS, max_iterations: 2, cost_cap_usd: 1, max_wall_minutes: 1 };
    expect(liveBudgetTripped(l, { iterations: 2, cost_usd: 0 }, 0, 1000)).toBeUndefined();
    expect(liveBudgetTripped(l, { iterations: 3, cost_usd: 0 }, 0, 1000)).toBe('max_iterations reached (2)');
    expect(liveBudgetTripped(l, { iterations: 1, cost_usd: 1 }, 0, 1000)).toBe('cost_cap_usd reached ($1.00 of $1)');
    expect(liveBudgetTripped(l, { iterations: 1, cost_usd: 0 }, 0, 60_000)).toBe('max_wall_minutes reached (1)');
    expect(safeguardOf('STOPPED', 'circuit breaker: 3 consecutive infrastructure errors')).toBe('circuit_breaker');
    expect(safeguardOf('STOPPED', 'cost_cap_usd reached ($1.00 of $1)')).toBe('cost_cap_usd');
    expect(safeguardOf('ESCALATED', 'task x failed after 3 attempt(s)')).toBe('escalated');
  });
});

describe('the environment of an MCP server', () => {
  it("gets only the listed names, and never the bot's credentials or settings", () => {
    const host = { A: '1', ANTHROPIC_API_KEY: 'k', PRIVATE_KEY: 'p', GOAL_LOOP_DB: '/x', PATH: '/bin', B: '2' };
    expect(hostEnv(['A', 'ANTHROPIC_API_KEY', 'PRIVATE_KEY', 'GOAL_LOOP_DB', 'PATH', 'MISSING'], host)).toEqual({
      env: { A: '1' },
      refused: ['ANTHROPIC_API_KEY', 'PRIVATE_KEY', 'GOAL_LOOP_DB', 'PATH'],
      why: { ANTHROPIC_API_KEY: expect.any(String), PRIVATE_KEY: expect.any(String), GOAL_LOOP_DB: expect.any(String), PATH: expect.any(String) },
      missing: ['MISSING'],
    });
  });
});
