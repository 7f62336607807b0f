import { describe, expect, it } from 'vitest';
import { STATE_LABELS } from '../../src/steering/labels.js';
import { ESCALATION_MARKER, STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalBlock, OWNER, REPO } from '../helpers/github-app-harness.js';
import { TEST_STORE } from '../helpers/test-store.js';
import { type IssueSeed, waitForGoal, waitUntil, workerScene } from '../helpers/worker-process.js';

/**
 * Every boundary where a ledger write and a GitHub effect follow one another (ARCHITECTURE.md,
 * "Crash boundaries"): a real worker process is SIGKILLed exactly there (GOAL_LOOP_CRASH_AT), a
 * new one starts, and GitHub must end as the ledger row implies, each effect exactly once. The
 * file runs on both stores (the vitest projects).
 */

const NUMBER = 41;
const KEY = { repo: `${OWNER}/${REPO}`, goalId: String(NUMBER) };
const BRANCH = `goal/${NUMBER}-crash-here`;
const issue = (tasks: string): IssueSeed => ({
  number: NUMBER,
  title: 'Crash here',
  body: goalBlock(`objective: Survive a crash at every boundary\ntasks:\n${tasks}`),
  user: 'alice',
  labels: ['goal'],
});

const THREE = issue(`  - { id: t1, title: One, run: "echo 1 > t1", verification: "test -f t1" }
  - { id: t2, title: Two, run: "echo 2 > t2", verification: "test -f t2", dependencies: [t1] }
  - { id: t3, title: Three, run: "echo 3 > t3", verification: "test -f t3", dependencies: [t2] }
`);
const ESCALATES = issue(`  - { id: t1, title: One, run: "echo 1 > t1", verification: "test -f t1" }
  - { id: t2, title: Two, run: "true", verification: "echo never >&2; false", dependencies: [t1], max_retries: 1 }
`);
const NEEDS_APPROVAL = issue(`  - { id: t1, title: One, run: "echo 1 > t1", verification: "test -f t1" }
  - { id: t2, title: Two, run: "echo 2 > t2", verification: "test -f t2", dependencies: [t1], requires_approval: true }
`);
const INVALID = issue(`  - { id: t1, title: One, run: "echo 1 > t1" }
`);

type Scene = Awaited<ReturnType<typeof workerScene>>;

/** The first worker dies at `point` (and only there); returns the scene for the second. */
async function killedAt(point: string, seed: IssueSeed): Promise<Scene> {
  const s = await workerScene(seed);
  const first = s.worker({ GOAL_LOOP_CRASH_AT: point });
  await s.label();
  const r = await first.done;
  expect(r.signal, `the worker was to die at ${point}; it ended with ${r.code}:\n${r.stderr.slice(-3000)}`).toBe('SIGKILL');
  return s;
}

/** Polls GitHub (the fake) until `problems` finds none; fails with the last ones it found. */
async function convergesOn(s: Scene, problems: () => string[], ms = 40_000): Promise<void> {
  let last: string[] = [];
  try {
    await waitUntil(
      () => {
        last = problems();
        return last.length === 0;
      },
      'GitHub to show the goal as its ledger row implies',
      ms,
    );
  } catch {
    throw new Error(`GitHub did not converge (${TEST_STORE}): ${last.join('; ')}`);
  }
  expect(s.fake.violations).toEqual([]);
  expect(s.fake.unhandled).toEqual([]);
}

const headOf = (s: Scene): string | undefined => {
  try {
    return git(s.repo.bare, 'rev-parse', `refs/heads/${BRANCH}`);
  } catch {
    return undefined;
  }
};
const stateLabels = (s: Scene) => s.fake.labels(NUMBER).filter((l) => (STATE_LABELS as readonly string[]).includes(l));
const statusComments = (s: Scene) => s.fake.commentsOn(NUMBER).filter((c) => c.body.includes(STATUS_MARKER));

/** One PR for the goal branch, ready or draft as asked; its head's check run concluded as asked; one status comment; one state label. */
function githubShows(s: Scene, want: { label: string; ready: boolean; conclusion?: string; comments?: [RegExp, number][] }): string[] {
  const out: string[] = [];
  const pulls = s.fake.pulls.filter((p) => p.head === BRANCH);
  if (pulls.length !== 1) out.push(`${pulls.length} pull requests`);
  const pr = pulls[0];
  if (pr && pr.draft === want.ready) out.push(`the pull request is ${pr.draft ? 'a draft' : 'ready'}`);
  const head = headOf(s);
  if (want.conclusion) {
    const runs = s.fake.checkRuns.filter((c) => c.name === 'goal-loop' && c.headSha === head);
    if (runs.length !== 1) out.push(`${runs.length} check runs on the head`);
    else if (runs[0]!.status !== 'completed' || runs[0]!.conclusion !== want.conclusion) out.push(`check run ${runs[0]!.status}/${runs[0]!.conclusion}`);
  }
  if (statusComments(s).length !== 1) out.push(`${statusComments(s).length} status comments`);
  const labels = stateLabels(s);
  if (labels.join() !== want.label) out.push(`labels ${labels.join(', ') || 'none'}`);
  for (const [pattern, n] of want.comments ?? []) {
    const found = s.fake.commentsOn(NUMBER).filter((c) => pattern.test(c.body)).length;
    if (found !== n) out.push(`${found} comments like ${pattern}`);
  }
  return out;
}

const pendingKinds = async (s: Scene) => (await s.store.ledger.pendingEffects({ key: KEY })).map((e) => e.kind);

describe(`crash at every boundary between the ledger and GitHub (${TEST_STORE})`, () => {
  it('after the resting state is written, before GitHub hears of it: the PR is still a draft, until a new worker finishes it', async () => {
    const s = await killedAt('effects-recorded:finished', THREE);
    const goal = await s.store.ledger.getGoal(KEY);
    expect(goal!.state).toBe('LOOP_COMPLETE');
    // What the chaos run found stuck: complete in the ledger, a draft and `goal:running` on GitHub.
    expect(s.fake.pulls[0]!.draft).toBe(true);
    expect(stateLabels(s)).toEqual(['goal:running']);
    expect(await pendingKinds(s)).toEqual(['finished']);

    s.worker();
    await convergesOn(s, () => githubShows(s, { label: 'goal:review', ready: true, conclusion: 'success' }));
    await waitUntil(async () => (await pendingKinds(s)).length === 0, 'the effect to be done');
    expect(checkpointCommits(s.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1', 't2', 't3']);
    expect((await s.store.ledger.getGoal(KEY))!.state).toBe('LOOP_COMPLETE');
  });

  it('after GitHub was told the goal finished, before the effect was marked done: told once more, harmlessly', async () => {
    const s = await killedAt('effect-performed:finished', THREE);
    expect(s.fake.pulls[0]!.draft).toBe(false);
    expect(await pendingKinds(s)).toEqual(['finished']);
    s.worker();
    await convergesOn(s, () => githubShows(s, { label: 'goal:review', ready: true, conclusion: 'success' }));
    await waitUntil(async () => (await pendingKinds(s)).length === 0, 'the effect to be done');
    expect(s.fake.graphql.filter((g) => g.query.includes('markPullRequestReadyForReview')).length).toBeLessThanOrEqual(2);
  });

  it('after a checkpoint is written, before the PR is opened: the new worker opens it once and finishes the goal', async () => {
    const s = await killedAt('effects-recorded:checkpointed', THREE);
    expect(s.fake.pulls).toHaveLength(0);
    expect((await s.store.ledger.listTasks(KEY)).map((t) => t.status)[0]).toBe('done');
    s.worker();
    await waitForGoal(s.store, KEY, ['LOOP_COMPLETE'], 40_000);
    await convergesOn(s, () => githubShows(s, { label: 'goal:review', ready: true, conclusion: 'success' }));
    expect(checkpointCommits(s.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1', 't2', 't3']);
  });

  it('after a checkpoint is committed and recorded, before its push: the new worker pushes that commit first, and the task is not done again', async () => {
    const s = await killedAt('effects-recorded:push', THREE);
    expect(headOf(s)).toBeUndefined();
    expect((await s.store.ledger.listTasks(KEY)).map((t) => [t.taskId, t.status])[0]).toEqual(['t1', 'done']);
    expect(await pendingKinds(s)).toEqual(['push', 'checkpointed']);
    s.worker();
    await waitForGoal(s.store, KEY, ['LOOP_COMPLETE'], 40_000);
    await convergesOn(s, () => githubShows(s, { label: 'goal:review', ready: true, conclusion: 'success' }));
    expect(checkpointCommits(s.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1', 't2', 't3']);
    expect((await s.store.ledger.listTasks(KEY)).map((t) => [t.taskId, t.attempts])).toEqual([
      ['t1', 1],
      ['t2', 1],
      ['t3', 1],
    ]);
  });

  it('after the push, before it is marked done: pushed again harmlessly (the remote has it), the PR opened once', async () => {
    const s = await killedAt('effect-performed:push', THREE);
    const pushed = headOf(s);
    expect(pushed).toBeDefined();
    expect(await pendingKinds(s)).toEqual(['push', 'checkpointed']);
    s.worker();
    await waitForGoal(s.store, KEY, ['LOOP_COMPLETE'], 40_000);
    await convergesOn(s, () => githubShows(s, { label: 'goal:review', ready: true, conclusion: 'success' }));
    expect(checkpointCommits(s.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1', 't2', 't3']);
    expect(git(s.repo.bare, 'rev-parse', `${BRANCH}~2`)).toBe(pushed);
  });

  it('after ESCALATED is written, before the escalation comment: the comment comes once, from the new worker', async () => {
    const s = await killedAt('effects-recorded:escalate', ESCALATES);
    expect((await s.store.ledger.getGoal(KEY))!.state).toBe('ESCALATED');
    expect(s.fake.commentsOn(NUMBER).filter((c) => c.body.includes(ESCALATION_MARKER))).toHaveLength(0);
    s.worker();
    await convergesOn(s, () => githubShows(s, { label: 'goal:escalated', ready: false, conclusion: 'failure', comments: [[/goal-loop:escalation/, 1]] }));
    await waitUntil(async () => (await pendingKinds(s)).length === 0, 'the effects to be done');
  });

  it('after the escalation comment is posted, before it is marked done: the retry finds it and posts no second one', async () => {
    const s = await killedAt('effect-performed:escalate', ESCALATES);
    expect(s.fake.commentsOn(NUMBER).filter((c) => c.body.includes(ESCALATION_MARKER))).toHaveLength(1);
    s.worker();
    await convergesOn(s, () => githubShows(s, { label: 'goal:escalated', ready: false, conclusion: 'failure', comments: [[/goal-loop:escalation/, 1]] }));
    await waitUntil(async () => (await pendingKinds(s)).length === 0, 'the effects to be done');
    expect(s.fake.commentsOn(NUMBER).filter((c) => c.body.includes(ESCALATION_MARKER))).toHaveLength(1);
  });

  it('after AWAITING_APPROVAL is written, and after its comment is posted: the approval is asked for exactly once', async () => {
    for (const point of ['effects-recorded:request_approval', 'effect-performed:request_approval']) {
      const s = await killedAt(point, NEEDS_APPROVAL);
      expect((await s.store.ledger.getGoal(KEY))!.state).toBe('AWAITING_APPROVAL');
      s.worker();
      await convergesOn(s, () => githubShows(s, { label: 'goal:awaiting-approval', ready: false, comments: [[/waiting for an approval/, 1]] }));
      await waitUntil(async () => (await pendingKinds(s)).length === 0, `the effects to be done (${point})`);
    }
  });

  it("after a turn's resting state is written, before its comment (an invalid goal block): the comment and label come once", async () => {
    const s = await killedAt('effects-recorded:comment', INVALID);
    expect((await s.store.ledger.getGoal(KEY))!.state).toBe('STOPPED');
    expect(s.fake.commentsOn(NUMBER).filter((c) => /cannot run the/.test(c.body))).toHaveLength(0);
    s.worker();
    await convergesOn(s, () => {
      const out: string[] = [];
      const replies = s.fake.commentsOn(NUMBER).filter((c) => /cannot run the/.test(c.body)).length;
      if (replies !== 1) out.push(`${replies} replies`);
      if (stateLabels(s).join() !== 'goal:stopped') out.push(`labels ${stateLabels(s).join()}`);
      if (statusComments(s).length !== 1) out.push(`${statusComments(s).length} status comments`);
      return out;
    });
    await waitUntil(async () => (await pendingKinds(s)).length === 0, 'the effects to be done');
  });

  it('a label sync a killed webhook process left pending (a pause applied to a resting goal) is performed by a worker', async () => {
    const s = await workerScene(THREE);
    const first = s.worker();
    await s.label();
    await waitForGoal(s.store, KEY, ['LOOP_COMPLETE'], 40_000);
    await convergesOn(s, () => githubShows(s, { label: 'goal:review', ready: true, conclusion: 'success' }));
    await first.kill();
    // As settleRestingControl writes it, had its process died right after: the state, and its sync pending.
    await s.store.ledger.recordChange(KEY, {
      transitions: [{ to: 'STOPPED', event: 'control', detail: 'stopped by a human', stopReason: 'stopped by a human' }],
      effects: [{ kind: 'sync', payload: {} }],
    });
    s.worker();
    await convergesOn(s, () => (stateLabels(s).join() === 'goal:stopped' ? [] : [`labels ${stateLabels(s).join()}`]));
    await waitUntil(async () => (await pendingKinds(s)).length === 0, 'the effect to be done');
    expect(statusComments(s)).toHaveLength(1);
    expect(statusComments(s)[0]!.body).toMatch(/STOPPED|stopped/);
  });
});
