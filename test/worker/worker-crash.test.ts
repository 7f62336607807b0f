import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { checkpointCommits } from '../helpers/git.js';
import { goalBlock, OWNER, REPO } from '../helpers/github-app-harness.js';
import { waitForGoal, waitUntil, workerScene } from '../helpers/worker-process.js';

const BODY = goalBlock(`
objective: Four steps that survive crashes
tasks:
  - { id: t1, title: One, run: "echo 1 > t1", verification: "test -f t1" }
  - { id: t2, title: Two, run: "touch started-t2; sleep 1; echo 2 > t2", verification: "test -f t2", dependencies: [t1] }
  - { id: t3, title: Three, run: "echo 3 > t3", verification: "test -f t3", dependencies: [t2] }
  - { id: t4, title: Four, run: "echo 4 > t4", verification: "test -f t4", dependencies: [t3] }
`);
const ISSUE = { number: 31, title: 'Crash me', body: BODY, user: 'alice', labels: ['goal'] };
const BRANCH = 'goal/31-crash-me';
const KEY = { repo: `${OWNER}/${REPO}`, goalId: '31' };

const scene = () => workerScene(ISSUE);

type Scene = Awaited<ReturnType<typeof scene>>;

/** A fresh worker finishes the goal; then everything happened exactly once. */
async function finishesExactlyOnce(s: Scene): Promise<void> {
  const second = s.worker();
  await waitForGoal(s.store, KEY, ['LOOP_COMPLETE'], 50_000);
  await second.kill('SIGTERM');
  expect(checkpointCommits(s.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1', 't2', 't3', 't4']);
  expect(s.fake.commentsOn(31).filter((c) => c.body.includes(STATUS_MARKER))).toHaveLength(1);
  expect(s.fake.pulls).toHaveLength(1);
  expect(s.fake.pulls[0]!.head).toBe(BRANCH);
  expect(s.fake.violations).toEqual([]);
  expect(s.fake.unhandled).toEqual([]);
}

describe('goal-loop worker processes: SIGKILL at the worst moments, then a new worker', () => {
  it('during a task: the new worker redoes only that task', async () => {
    const s = await scene();
    const first = s.worker();
    await s.label();
    const started = () => existsSync(join(s.workspaces, `${OWNER}-${REPO}`, '31', 'started-t2'));
    await waitUntil(started, 'task t2 to start');
    expect((await first.kill()).signal).toBe('SIGKILL');
    // t1's push may still have been on its way (the outbox's): either way t1 is not done again.
    expect(['', 't1']).toContain(
      checkpointCommits(s.repo.bare, BRANCH)
        .map((c) => c.task)
        .join(),
    );
    expect((await s.store.ledger.listTasks(KEY)).map((t) => t.status)[0]).toBe('done');
    await finishesExactlyOnce(s);
    expect((await s.store.ledger.listTasks(KEY)).map((t) => t.attempts)[0]).toBe(1);
  });

  it('between a commit and the ledger: the commit no step recorded is not a checkpoint and is not duplicated', async () => {
    const s = await scene();
    const first = s.worker({ GOAL_LOOP_CRASH_AT: 'checkpoint-committed' });
    await s.label();
    const r = await first.done;
    expect(r.signal, r.stderr).toBe('SIGKILL');
    expect(checkpointCommits(s.repo.bare, BRANCH)).toEqual([]);
    await finishesExactlyOnce(s);
  });

  it('between a push and marking it done (the next task may be running): the checkpoint is on the remote, and its task is not done again', async () => {
    const s = await scene();
    const first = s.worker({ GOAL_LOOP_CRASH_AT: 'checkpoint-pushed' });
    await s.label();
    const r = await first.done;
    expect(r.signal, r.stderr).toBe('SIGKILL');
    expect(checkpointCommits(s.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1']);
    expect((await s.store.ledger.listTasks(KEY)).map((t) => t.status)[0]).toBe('done');
    await finishesExactlyOnce(s);
    expect((await s.store.ledger.listTasks(KEY)).map((t) => t.attempts)[0]).toBe(1);
  });

  it('during a status update: GitHub made the comment, the worker died before it heard back', async () => {
    const s = await scene();
    const held = s.bridge.holdResponse((r) => r.method === 'POST' && r.path.endsWith('/issues/31/comments') && r.body.includes('goal-loop:status'));
    const first = s.worker();
    await s.label();
    await held;
    expect((await first.kill()).signal).toBe('SIGKILL');
    expect(s.fake.commentsOn(31).filter((c) => c.body.includes(STATUS_MARKER))).toHaveLength(1);
    await finishesExactlyOnce(s);
  });
});
