import { describe, expect, it } from 'vitest';
import type { Octokit } from '../../src/github/github-forge.js';
import { goalLoopOctokit } from '../../src/github/octokit.js';
import { QueueReporter } from '../../src/github/queue-reporter.js';
import { MemoryWriteBudget } from '../../src/ledger/memory-write-budget.js';
import { readGitHubMeta } from '../../src/steering/goal-meta.js';
import { goalKeyFor } from '../../src/steering/issue-goal.js';
import { STATE_LABELS } from '../../src/steering/labels.js';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { goalLeaseName } from '../../src/worker/lease.js';
import { type AppHarness, appHarness, OWNER, REPO, silent, THREE_STEP_GOAL } from '../helpers/github-app-harness.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';

const issue = (n: number) => ({ number: n, title: `Goal ${n}`, body: THREE_STEP_GOAL, user: 'alice', labels: ['goal'] });
const key = (n: number) => goalKeyFor(OWNER, REPO, n);

/** The App's status comments on an issue. */
const statusComments = (h: AppHarness, n: number) => h.fake.commentsOn(n).filter((c) => c.body.includes(STATUS_MARKER));
const queueShown = async (h: AppHarness, n: number) => readGitHubMeta((await h.ledger.getGoal(key(n)))!.meta).queueShown;

/** A reporter on the harness's store and GitHub, on a clock the test moves (the queue's ages are read against it). */
function reporterFor(h: AppHarness, refreshesPerMinute = 10) {
  const clock = { now: Date.now() + 3000 };
  const reporter = new QueueReporter({
    ledger: h.ledger,
    queue: h.store.queue,
    logger: silent,
    auth: async (id) => (await h.probot.auth(id)) as unknown as Octokit,
    holder: 'reporter-test',
    intervalMs: 1000,
    refreshesPerMinute,
    clock: () => clock.now,
  });
  return { reporter, clock };
}

async function labelAll(h: AppHarness, numbers: number[]): Promise<void> {
  for (const n of numbers) await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: issue(n), label: 'goal' }));
}

describe('the queue report', () => {
  it('says at once where each waiting goal stands, refreshes moved places, and the run then takes the same comment', async () => {
    // Webhooks only at first: no worker, so every labelled goal waits. Status edits at the production
    // interval or slower, as in writes-per-goal.test.ts, so the count does not depend on this machine's speed.
    const h = await appHarness({ issues: [issue(1), issue(2), issue(3)], labels: [...STATE_LABELS], role: 'webhooks', minUpdateIntervalMs: 60_000 });
    await labelAll(h, [1, 2, 3]);
    expect(h.fake.writes()).toEqual([]);
    const { reporter, clock } = reporterFor(h, 2);

    expect((await reporter.report()).map((a) => [a.type, a.key.goalId])).toEqual([
      ['showQueued', '1'],
      ['showQueued', '2'],
      ['showQueued', '3'],
    ]);
    for (const [n, place] of [
      [1, 1],
      [2, 2],
      [3, 3],
    ] as const) {
      expect(statusComments(h, n)).toHaveLength(1);
      expect(statusComments(h, n)[0]!.body).toContain(`queued, position ${place} among the goals waiting for a worker`);
      expect(await queueShown(h, n)).toMatchObject({ position: place });
    }
    // Waiting goals get no state label: one write each, the status comment a run would post anyway.
    expect(h.fake.writes().map((w) => w.method)).toEqual(['POST', 'POST', 'POST']);
    expect(await reporter.report()).toEqual([]);

    // Goal 1 leaves the queue without a run (its job dropped): the others move up.
    await h.store.queue.cancel(key(1));
    clock.now += 60_000;
    // Goal 2 (shown 2, now 1: half its wait gone) before goal 3 (shown 3, now 2: a third).
    expect((await reporter.report()).map((a) => [a.type, a.key.goalId])).toEqual([
      ['refreshPosition', '2'],
      ['refreshPosition', '3'],
    ]);
    expect(statusComments(h, 2)[0]!.body).toContain('queued, position 1 among');
    expect(statusComments(h, 3)[0]!.body).toContain('queued, position 2 among');
    // Missed once: maybe a worker claimed it and is taking its lease. Missed twice: its state shows again.
    expect(statusComments(h, 1)[0]!.body).toContain('queued, position 1 among');
    expect((await reporter.report()).map((a) => [a.type, a.key.goalId])).toEqual([['showState', '1']]);
    expect(statusComments(h, 1)[0]!.body).not.toContain('queued, position');
    expect(statusComments(h, 1)[0]!.body).toContain('**State:** `INITIALIZING`');
    expect(await queueShown(h, 1)).toBeUndefined();

    // Workers start: each goal's run edits the comment the report posted, and forgets its place.
    await h.store.queue.enqueue({ key: key(1), mode: 'run', priority: 'P2' });
    await h.restart(undefined, 'both');
    await h.runtime.idle();
    for (const n of [1, 2, 3]) {
      expect(statusComments(h, n), `issue ${n}`).toHaveLength(1);
      expect(statusComments(h, n)[0]!.body).toContain('**State:** `LOOP_COMPLETE`');
      expect(h.fake.labels(n)).toContain('goal:review');
      expect(await queueShown(h, n)).toBeUndefined();
      const pr = h.fake.pulls.find((p) => (p.body ?? '').includes(`Closes #${n}`))!;
      // A goal that waited costs no more writes than one that did not (at most 12 for three tasks).
      const writes = h.fake.writesFor({ issue: n, pulls: [pr.number] });
      expect(writes.length, JSON.stringify(writes.map((w) => `${w.method} ${w.path}`))).toBeLessThanOrEqual(12);
    }
    expect(await reporter.report()).toEqual([]);
  });

  it('never writes a goal’s status while its run holds the goal, nor while the sweep performs its effects', async () => {
    const h = await appHarness({ issues: [issue(5)], labels: [...STATE_LABELS], role: 'webhooks' });
    await labelAll(h, [5]);
    const { reporter } = reporterFor(h);

    await h.ledger.acquireLease(goalLeaseName(key(5)), 'worker-a', 60_000);
    expect(await reporter.report()).toEqual([]); // its run is on: it waits for nothing
    await h.ledger.releaseLease(goalLeaseName(key(5)), 'worker-a');

    await h.ledger.acquireLease(goalLeaseName(key(5)), 'worker-a#effects', 60_000);
    expect((await reporter.report()).map((a) => a.type)).toEqual(['showQueued']); // decided, then found the goal held
    expect(h.fake.writes()).toEqual([]);
    await h.ledger.releaseLease(goalLeaseName(key(5)), 'worker-a#effects');

    await reporter.report();
    expect(statusComments(h, 5)).toHaveLength(1);
  });

  it('takes its writes from the installation’s budget without waiting for it: what does not fit now goes at a later report', async () => {
    // A minute of 4 writes: "queued" comments (normal) may fill 3 of them, refreshes (background) 2.
    const budget = new MemoryWriteBudget();
    const BudgetedOctokit = goalLoopOctokit({
      retryAfterBaseMs: 5,
      writeMinTimeMs: 0,
      writeBudget: { store: budget, limits: { windows: [{ ms: 60_000, max: 4 }], shares: { urgent: 1, normal: 0.75, background: 0.5 } } },
    });
    const numbers = [21, 22, 23, 24];
    const h = await appHarness({ issues: numbers.map(issue), labels: [...STATE_LABELS], role: 'webhooks', Octokit: BudgetedOctokit });
    await labelAll(h, numbers);
    const { reporter, clock } = reporterFor(h);

    // Four to show, room for three: the fourth would wait a minute, so it is not sent now (the report does not hang).
    expect(await reporter.report()).toHaveLength(4);
    expect(numbers.map((n) => statusComments(h, n).length)).toEqual([1, 1, 1, 0]);
    await h.store.queue.cancel(key(21));
    clock.now += 60_000;
    await reporter.report();
    // The moved places are refreshes, held back: the window already holds more than their share.
    expect(h.fake.writes()).toHaveLength(3);
    expect(statusComments(h, 22)[0]!.body).toContain('queued, position 2 among');
  });
});
