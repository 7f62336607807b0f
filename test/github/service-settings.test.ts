import { describe, expect, it } from 'vitest';
import { GoalLoopOctokit } from '../../src/github/octokit.js';
import { serviceSettings } from '../../src/github/service-settings.js';
import { DEFAULT_WRITE_LIMITS } from '../../src/ports/write-budget.js';

describe('serviceSettings: the write budget', () => {
  it('defaults to the port’s limits: 70 writes a minute and 450 an hour per installation', () => {
    expect(serviceSettings({}).writeLimits).toEqual(DEFAULT_WRITE_LIMITS);
  });

  it('reads the minute’s and the hour’s maximum from the environment, keeping the priority shares', () => {
    const { writeLimits } = serviceSettings({ GOAL_LOOP_GITHUB_WRITES_PER_MINUTE: '30', GOAL_LOOP_GITHUB_WRITES_PER_HOUR: '200' });
    expect(writeLimits.windows).toEqual([
      { ms: 60_000, max: 30 },
      { ms: 3_600_000, max: 200 },
    ]);
    expect(writeLimits.shares).toEqual(DEFAULT_WRITE_LIMITS.shares);
    expect(serviceSettings({ GOAL_LOOP_GITHUB_WRITES_PER_HOUR: '1000' }).writeLimits.windows).toEqual([
      { ms: 60_000, max: 70 },
      { ms: 3_600_000, max: 1000 },
    ]);
  });

  it('ignores a value that is not a positive whole number, as the other settings do', () => {
    for (const bad of ['0', '-5', 'many', '']) {
      expect(serviceSettings({ GOAL_LOOP_GITHUB_WRITES_PER_MINUTE: bad, GOAL_LOOP_GITHUB_WRITES_PER_HOUR: bad }).writeLimits).toEqual(DEFAULT_WRITE_LIMITS);
    }
  });

  it('spaces one process’s writes a second apart, comments included, unless told otherwise', () => {
    expect(serviceSettings({}).writeMinTimeMs).toBe(1000);
    expect(serviceSettings({ GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: '0' }).writeMinTimeMs).toBe(0);
    expect(serviceSettings({ GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: '-5' }).writeMinTimeMs).toBe(1000);
    expect(serviceSettings({}).Octokit).not.toBe(GoalLoopOctokit);
  });
});
