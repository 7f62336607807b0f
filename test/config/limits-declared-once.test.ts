import { describe, expect, it } from 'vitest';
import { goalSpecJsonSchema } from '../../src/config/export-schema.js';
import { configLimits, parseRepoConfig, RepoConfigSchema, repoConfigJsonSchema } from '../../src/config/repo-config.js';
import { DEFAULT_LIMITS, LIMIT_KEYS, LimitsSchema, loosenedKeys, strictness, tighten } from '../../src/goal/limits.js';

describe('the loop limits, declared once', () => {
  it('every declaration has the same keys: defaults, spec override, repo config', () => {
    expect(LIMIT_KEYS).toEqual(Object.keys(DEFAULT_LIMITS));
    expect(Object.keys(LimitsSchema.shape)).toEqual(LIMIT_KEYS);
    for (const key of LIMIT_KEYS) expect(RepoConfigSchema.shape, key).toHaveProperty(key);
  });

  it('the repo config documents each default without applying it', () => {
    const props = (repoConfigJsonSchema() as { properties: Record<string, { default?: unknown; description?: string }> }).properties;
    for (const key of LIMIT_KEYS) {
      expect(props[key]?.default, key).toEqual(DEFAULT_LIMITS[key]);
      expect(props[key]?.description, key).toBeTruthy();
    }
    expect(configLimits(parseRepoConfig({}))).toEqual({});
  });

  it('the spec override shows no default (its keys fall back to the repo config, not to the defaults)', () => {
    const spec = goalSpecJsonSchema() as { properties: { limits: { properties: Record<string, { default?: unknown; description?: string }> } } };
    for (const key of LIMIT_KEYS) {
      expect(spec.properties.limits.properties[key]?.default, key).toBeUndefined();
      expect(spec.properties.limits.properties[key]?.description, key).toBeTruthy();
    }
  });

  it.each([
    [5, 5],
    [0.5, 0.5],
    ['low', 0],
    ['medium', 1],
    ['high', 2],
    ['critical', 3],
  ] as const)('strictness(%s) = %s (lower is stricter)', (value, expected) => {
    expect(strictness(value)).toBe(expected);
  });

  it.each([
    [{ max_retries: 2 }, { ...DEFAULT_LIMITS, max_retries: 2 }, []],
    [{ max_retries: 9 }, DEFAULT_LIMITS, ['max_retries']],
    [{ cost_cap_usd: 0 }, { ...DEFAULT_LIMITS, cost_cap_usd: 0 }, []],
    [{ max_risk: 'medium' }, { ...DEFAULT_LIMITS, max_risk: 'medium' }, []],
    [{ max_risk: 'critical' }, DEFAULT_LIMITS, ['max_risk']],
    [{ max_wall_minutes: 120 }, DEFAULT_LIMITS, []],
    [{ max_iterations: 60, task_timeout_s: 60 }, { ...DEFAULT_LIMITS, task_timeout_s: 60 }, ['max_iterations']],
  ] as const)('tighten(DEFAULT_LIMITS, %j) keeps only the stricter keys', (layer, tightened, loosened) => {
    expect(tighten(DEFAULT_LIMITS, layer)).toEqual(tightened);
    expect(loosenedKeys(DEFAULT_LIMITS, layer)).toEqual(loosened);
  });
});
