import { describe, expect, it } from 'vitest';
import { GitHubForge, type Octokit } from '../../src/github/github-forge.js';
import type { LoopResult } from '../../src/goal/result.js';
import { readGitHubMeta } from '../../src/steering/goal-meta.js';
import { STATE_LABELS } from '../../src/steering/labels.js';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { snapshotFromLedger } from '../../src/steering/turn/snapshot.js';
import { git } from '../helpers/git.js';
import { appHarness, goalBlock, INSTALLATION, OWNER, REPO, silent } from '../helpers/github-app-harness.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';

/** What the forge sends, and what it leaves unsent: the status comment's edits, labels, check runs. */

const ISSUE = {
  number: 61,
  title: 'Writes',
  body: goalBlock(`objective: Few writes
tasks:
  - { id: t1, title: One, run: "echo 1 > one", verification: "test -f one" }
`),
  user: 'alice',
  labels: ['goal', 'help wanted'],
};
const KEY = { repo: `${OWNER}/${REPO}`, goalId: '61' };
const BRANCH = 'goal/61-writes';

/** A goal done through the App, and a fresh forge on it (a new process), its status edits at most once a minute. */
async function scene() {
  const h = await appHarness({ issues: [ISSUE], labels: [...STATE_LABELS] });
  await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));
  const g = readGitHubMeta((await h.ledger.getGoal(KEY))!.meta).github!;
  const octokit = (await h.probot.auth(INSTALLATION)) as unknown as Octokit;
  const forge = new GitHubForge({ octokit, goal: g, key: KEY, ledger: h.ledger, attemptLog: h.ledger, logger: silent, minUpdateIntervalMs: 60_000 });
  const status = () => h.fake.commentsOn(61).find((c) => c.body.startsWith(STATUS_MARKER))!;
  return { h, g, octokit, forge, status, snapshot: () => snapshotFromLedger(h.ledger, KEY, g) };
}

const result = (sha: string): LoopResult => ({
  goal_id: '61',
  status: 'LOOP_COMPLETE',
  success: true,
  tasks_completed: 1,
  tasks_total: 1,
  iterations: 1,
  errors_recovered: 0,
  tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 },
  cost_usd: 0,
  duration_s: 1,
  stop_reason: null,
  branch: BRANCH,
  checkpoints: [{ task_id: 't1', sha }],
});

describe('the forge writes only what changed', () => {
  it('a new process whose status comment already shows the goal sends no edit, and no label', async () => {
    const s = await scene();
    const writes = s.h.fake.writes().length;
    await s.forge.flush(await s.snapshot());
    await s.forge.finished(result(git(s.h.repo.bare, 'rev-parse', BRANCH)), await s.snapshot(), { id: '61.90', retry: true });
    expect(s.h.fake.writes().slice(writes)).toEqual([]);
  });

  it('progress within a state coalesces: nothing is sent until the interval or a rest, and then only the latest', async () => {
    const s = await scene();
    const base = await s.snapshot();
    const edits = () => s.h.fake.calls('PATCH', /\/issues\/comments\/\d+$/).length;
    // The first update of a new process shows its state at once (it knows nothing it has shown),
    // in the background: the run does not wait for it.
    await s.forge.update({ ...base, state: 'EXECUTING', iterations: 1 });
    await s.forge.settled();
    const after = edits();
    expect(s.status().body).toContain('`EXECUTING`');
    for (let i = 2; i <= 5; i++) await s.forge.update({ ...base, state: i % 2 === 0 ? 'EVALUATING' : 'EXECUTING', iterations: i });
    expect(edits()).toBe(after);
    await s.forge.flush();
    expect(edits()).toBe(after + 1);
    expect(s.status().body).toMatch(/\*\*Budget:\*\* 5\/\d+ iterations/);
    // A new state (another label) shows at once.
    await s.forge.update({ ...base, state: 'PAUSED', iterations: 5 });
    await s.forge.settled();
    expect(s.status().body).toContain('`PAUSED`');
    expect(s.h.fake.labels(61).sort()).toEqual(['goal', 'goal:paused', 'help wanted']);
  });

  it('setup shows in the status comment: its command while it runs, then done; not every second of it', async () => {
    const s = await scene();
    const base = await s.snapshot();
    const edits = () => s.h.fake.calls('PATCH', /\/issues\/comments\/\d+$/).length;
    await s.forge.update({ ...base, state: 'EXECUTING', setup: { status: 'running', command: 'npm ci', startedAt: Date.now() } });
    await s.forge.settled();
    expect(s.status().body).toMatch(/^\*\*Setup:\*\* running `npm ci` \(\d+ s\)$/m);
    const after = edits();
    await s.forge.update({ ...base, state: 'EXECUTING', iterations: 2, setup: { status: 'running', command: 'npm ci', startedAt: Date.now() } });
    await s.forge.update({ ...base, state: 'EXECUTING', setup: { status: 'done', command: 'npm ci', startedAt: Date.now(), durationMs: 14_000 } });
    await s.forge.flush();
    expect(edits()).toBe(after + 1);
    expect(s.status().body).toContain('**Setup:** done in 14 s, `npm ci`');
  });

  it('a status edit held back (by the write budget) does not hold the run up, and the updates meanwhile become one edit', async () => {
    const s = await scene();
    const base = await s.snapshot();
    const edits = () => s.h.fake.calls('PATCH', /\/issues\/comments\/\d+$/).length;
    // Status edits wait at a gate, as a background write waits for room in the budget.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let held = 0;
    s.octokit.hook.before('request', async (options) => {
      if (options.method !== 'PATCH' || !/\/issues\/comments\//.test(String(options.url))) return;
      held += 1;
      await gate;
    });
    const before = edits();
    let returned = false;
    const first = s.forge.update({ ...base, state: 'EXECUTING', iterations: 1 }).then(() => (returned = true));
    while (held === 0) await new Promise((r) => setImmediate(r));
    await first;
    expect(returned).toBe(true); // the run went on while its status edit waited
    for (let i = 2; i <= 4; i++) await s.forge.update({ ...base, state: i === 4 ? 'PAUSED' : 'EXECUTING', iterations: i });
    expect(held).toBe(1); // nothing else was sent meanwhile
    open();
    await s.forge.settled();
    while (held < 2) await new Promise((r) => setImmediate(r));
    await s.forge.settled();
    // The held edit, then one with the latest snapshot (a new state, so at once): not one per update.
    expect(edits()).toBe(before + 2);
    expect(s.status().body).toContain('`PAUSED`');
    expect(s.status().body).toMatch(/\*\*Budget:\*\* 4\/\d+ iterations/);
  });

  it('a state passed through within the settle time costs no write: INITIALIZING on the way to EXECUTING shows as running, in one edit', async () => {
    const s = await scene();
    const base = await s.snapshot();
    const before = s.h.fake.writes().length;
    await s.forge.update({ ...base, state: 'INITIALIZING', iterations: 0 });
    await s.forge.update({ ...base, state: 'DECOMPOSING', iterations: 0 });
    await s.forge.update({ ...base, state: 'EXECUTING', iterations: 1 });
    expect(s.h.fake.writes().length).toBe(before); // nothing yet: the first label settles
    await s.forge.settled();
    const sent = s.h.fake.writes().slice(before);
    expect(sent.map((w) => w.method)).toEqual(['PATCH', 'POST']); // the comment, then the label (graphql swap or add)
    expect(JSON.stringify(sent)).not.toContain('goal:planning');
    expect(s.status().body).toContain('`EXECUTING`');
    expect(s.h.fake.labels(61)).toContain('goal:running');
  });

  it("a check run left in progress on an older head (an older release's) is concluded as superseded; the head's is concluded", async () => {
    const s = await scene();
    const head = git(s.h.repo.bare, 'rev-parse', BRANCH);
    const old = git(s.h.repo.bare, 'rev-parse', `${BRANCH}~1`);
    const { data: stale } = await s.octokit.rest.checks.create({ owner: OWNER, repo: REPO, name: 'goal-loop', head_sha: old, status: 'in_progress' });
    await s.h.ledger.setMeta(KEY, { checkRunId: stale.id, checkRunSha: old });
    await s.forge.finished(result(head), await s.snapshot(), { id: '61.91', retry: false });
    expect(s.h.fake.checkRuns.find((c) => c.id === stale.id)).toMatchObject({ status: 'completed', conclusion: 'neutral', output: { title: 'Superseded' } });
    expect(s.h.fake.checkRuns.filter((c) => c.headSha === head)).toEqual([expect.objectContaining({ status: 'completed', conclusion: 'success' })]);
    expect(s.h.fake.checkRuns.filter((c) => c.status !== 'completed')).toEqual([]);
  });

  it("a label change is one request, and never drops a label someone else set, even one added since the goal's last write", async () => {
    const s = await scene();
    s.h.fake.issue(61).labels.push('needs-docs');
    const writes = s.h.fake.writes().length;
    await s.forge.flush({ ...(await s.snapshot()), state: 'ESCALATED' });
    expect(
      s.h.fake
        .writes()
        .slice(writes)
        .map((r) => `${r.method} ${r.pathname}`),
    ).toEqual([`PATCH /repos/${OWNER}/${REPO}/issues/comments/${s.status().id}`, 'POST /graphql']);
    expect(s.h.fake.labels(61).sort()).toEqual(['goal', 'goal:escalated', 'help wanted', 'needs-docs']);
  });
});
