import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointCommits } from '../helpers/git.js';
import { goalBlock, OWNER, REPO } from '../helpers/github-app-harness.js';
import { waitForGoal, waitUntil, workerScene } from '../helpers/worker-process.js';

const BODY = goalBlock(`
objective: Steered from another process
tasks:
  - { id: t1, title: One, run: "echo 1 > t1", verification: "test -f t1" }
  - { id: t2, title: Two, run: "touch started-t2; sleep 30; echo 2 > t2", verification: "test -f t2", dependencies: [t1] }
`);
const ISSUE = { number: 41, title: 'Steer me', body: BODY, user: 'alice', labels: ['goal'] };
const KEY = { repo: `${OWNER}/${REPO}`, goalId: '41' };

describe('commands reach a goal running in a worker process', () => {
  it("a /goal pause to the webhook side stops the worker's loop within seconds; /goal stop then ends it", async () => {
    const s = await workerScene(ISSUE);
    s.worker();
    await s.label();
    await waitUntil(() => existsSync(join(s.workspaces, `${OWNER}-${REPO}`, '41', 'started-t2')), 'task t2 to start');
    await s.comment('/goal pause');
    // Within 15 s while the task sleeps 30 s: only an interrupted loop pauses in time.
    await waitForGoal(s.store, KEY, ['PAUSED'], 15_000);
    expect(checkpointCommits(s.repo.bare, 'goal/41-steer-me').map((c) => c.task)).toEqual(['t1']);
    await s.comment('/goal stop');
    const stopped = await waitForGoal(s.store, KEY, ['STOPPED'], 15_000);
    expect(stopped.stopReason).toMatch(/stopped by a human/);
    // The new label comes first, then the old one goes (never a moment with none).
    await waitUntil(() => s.fake.labels(41).includes('goal:stopped') && !s.fake.labels(41).includes('goal:paused'), 'the stopped label alone');
  });
});
