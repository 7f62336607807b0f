import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseRepoConfig } from '../../src/config/repo-config.js';
import { checksAfterTurn } from '../../src/github/checks-after-run.js';
import type { GitHubForge, Octokit } from '../../src/github/github-forge.js';
import type { GoalState } from '../../src/goal/states.js';
import type { GoalMode } from '../../src/ports/queue.js';
import { githubGoalFrom } from '../../src/steering/issue-goal.js';
import { key, spec } from '../helpers/ledger-contract.js';
import { MemoryLedger } from '../helpers/memory-ledger.js';

const silent = pino({ level: 'silent' });
const g = githubGoalFrom(
  { name: 'widgets', owner: { login: 'octo-org' }, clone_url: '/tmp/w.git', html_url: 'https://github.com/octo-org/widgets', default_branch: 'main' },
  { number: 7, title: 'Build it', user: { login: 'alice' }, assignees: [] },
  42,
);

/** A goal in `state` with `meta`, and what checksAfterTurn asks to run later. This path reads nothing from GitHub. */
async function turnEnd(state: GoalState, meta: Record<string, unknown>, graceTurn = false, grace = 600) {
  const ledger = new MemoryLedger();
  await ledger.upsertGoal(key, { spec: spec(), branch: g.branch });
  await ledger.setMeta(key, { github: g, prNumber: 9, ...meta });
  await ledger.setState(key, state, 'test');
  const later: Array<{ mode: GoalMode; delayMs: number }> = [];
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('GitHub is not asked on this path');
      },
    },
  );
  await checksAfterTurn(
    { ledger, logger: silent, later: async (_k, mode, _p, delayMs) => void later.push({ mode, delayMs }) },
    { key, g, octokit: unused as Octokit, forge: unused as GitHubForge, config: parseRepoConfig({ checks_grace_s: grace }), graceTurn },
  );
  return { later, meta: (await ledger.getGoal(key))!.meta };
}

describe('checksAfterTurn: what a goal owes its base and its checks when a turn ends', () => {
  it('the base moved during a run that ended complete: it runs again at once (and follows); the mark is gone', async () => {
    const { later, meta } = await turnEnd('LOOP_COMPLETE', { baseMovedDuringRun: 'c'.repeat(40) });
    expect(later).toEqual([{ mode: 'run', delayMs: 0 }]);
    expect(meta).not.toHaveProperty('baseMovedDuringRun');
  });

  it('the base moved during a run that ended escalated: nothing runs (its human decides); the mark is gone', async () => {
    const { later, meta } = await turnEnd('ESCALATED', { baseMovedDuringRun: 'c'.repeat(40) });
    expect(later).toEqual([]);
    expect(meta).not.toHaveProperty('baseMovedDuringRun');
  });

  it('a draft awaiting checks that have not appeared: a status turn when the grace period ends', async () => {
    const since = new Date(Date.now() - 100_000).toISOString();
    const { later } = await turnEnd('LOOP_COMPLETE', { checksAwaited: { sha: 'a'.repeat(40), since, verdict: 'none' } });
    expect(later).toHaveLength(1);
    expect(later[0]!.mode).toBe('status');
    expect(later[0]!.delayMs).toBeGreaterThan(400_000);
    expect(later[0]!.delayMs).toBeLessThanOrEqual(500_000);
  });

  it('an early status turn (another write woke it) asks again for the rest of the period, and judges nothing yet', async () => {
    const since = new Date().toISOString();
    const { later } = await turnEnd('LOOP_COMPLETE', { checksAwaited: { sha: 'a'.repeat(40), since, verdict: 'pending' } }, true);
    expect(later.map((l) => l.mode)).toEqual(['status']);
  });

  it('nothing awaited, or a goal no longer complete: nothing later', async () => {
    expect((await turnEnd('LOOP_COMPLETE', {})).later).toEqual([]);
    expect((await turnEnd('ESCALATED', { checksAwaited: { sha: 'a'.repeat(40), since: new Date().toISOString() } })).later).toEqual([]);
  });
});
