import { describe, expect, it } from 'vitest';
import { CoreGoalMetaSchema, readCoreMeta, readMeta } from '../../src/goal/meta.js';
import { readGitHubMeta } from '../../src/steering/goal-meta.js';

describe("a goal's meta, read through its schema", () => {
  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ['keeps what fits', { controlReason: 'paused by a human', budgetUsd: 12.5 }, { controlReason: 'paused by a human', budgetUsd: 12.5 }],
    ['keeps a $0 budget (`/goal budget 0` stops spending)', { budgetUsd: 0 }, { budgetUsd: 0 }],
    ['drops a negative budget', { budgetUsd: -1, controlReason: 'x' }, { controlReason: 'x' }],
    ['drops a value of the wrong type, keeps the rest', { budgetUsd: '12', controlReason: 'x' }, { controlReason: 'x' }],
    ["keeps other wirings' keys as they are", { prNumber: 3 }, { prNumber: 3 }],
  ])('%s', (_name, raw, expected) => {
    expect(readCoreMeta(raw)).toEqual(expected);
  });

  it('reports each key it drops', () => {
    const dropped: string[] = [];
    readMeta(CoreGoalMetaSchema, { budgetUsd: 'lots', mcp_limits: { max_iterations: -2 } }, (key) => dropped.push(key));
    expect(dropped.sort()).toEqual(['budgetUsd', 'mcp_limits']);
  });

  it("reads the App's keys, and a malformed github entry is not a goal's home", () => {
    expect(readGitHubMeta({ prNumber: 4, merged: true, pendingReviews: [{ taskId: 'review-1', prNumber: 4, reviewId: 9 }] })).toMatchObject({ prNumber: 4, merged: true });
    expect(readGitHubMeta({ github: { owner: 'o' }, prNumber: 4 })).toEqual({ prNumber: 4 });
  });
});
