import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { fakeGitHub } from '../helpers/fake-github.js';
import { checkpointCommits } from '../helpers/git.js';
import { goalBlock, INSTALLATION, OWNER, REPO } from '../helpers/github-app-harness.js';
import { githubBridge } from '../helpers/github-bridge.js';
import { freshDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';
import { startWorkerProcess, waitForGoal, webhookSide } from '../helpers/worker-process.js';

const GOALS = 8;
const issue = (n: number) => ({
  number: 100 + n,
  title: `Goal ${n}`,
  user: 'alice',
  labels: ['goal'],
  body: goalBlock(`
objective: Goal ${n}
tasks:
  - { id: a, title: A, run: "sleep 0.3; echo a > a", verification: "test -f a" }
  - { id: b, title: B, run: "sleep 0.3; echo b > b", verification: "test -f b", dependencies: [a] }
`),
});

interface Span {
  worker: string;
  goal: string;
  start: number;
  end: number;
}

/** Start/end of each goal's work, from a worker's JSON log. */
function spans(log: string): Span[] {
  const open = new Map<string, { worker: string; start: number }>();
  const out: Span[] = [];
  for (const line of log.split('\n')) {
    if (!line.startsWith('{')) continue;
    const e = JSON.parse(line) as { msg?: string; goal?: string; worker?: string; time: number };
    if (e.msg === 'working goal' && e.goal && e.worker) open.set(e.goal, { worker: e.worker, start: e.time });
    if (e.msg === 'goal work ended' && e.goal && open.has(e.goal)) {
      out.push({ goal: e.goal, ...open.get(e.goal)!, end: e.time });
      open.delete(e.goal);
    }
  }
  return out;
}

describe('two goal-loop worker processes on one PostgreSQL', () => {
  it('complete eight goals exactly once between them, never the same goal at the same moment', async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const issues = Array.from({ length: GOALS }, (_, i) => issue(i + 1));
    const fake = fakeGitHub({ owner: OWNER, repo: REPO, installationId: INSTALLATION, collaborators: { alice: 'write' }, issues, strictAuth: true });
    fake.setFile('.github/goal-loop.yml', 'sandbox: process\n');
    const bridge = await githubBridge();
    const url = await freshDatabase();
    const store = await openPostgresStore(url);
    const workers = [1, 2].map((n) =>
      startWorkerProcess({ bridge, store: { DATABASE_URL: url }, workspaces: join(root, `machine-${n}`), env: { GOAL_LOOP_CONCURRENCY: '2', LOG_LEVEL: 'info', LOG_FORMAT: 'json' } }),
    );
    onTestFinished(async () => {
      await Promise.all(workers.map((w) => w.kill()));
      await bridge.close();
      await store.close();
      fake.stop();
    });
    const webhooks = await webhookSide(store);
    for (const i of issues) {
      await webhooks.deliver('issues', issuesLabeled({ owner: OWNER, repo: REPO, installationId: INSTALLATION, cloneUrl: repo.bare, sender: 'alice', issue: i, label: 'goal' }));
    }
    for (const i of issues) await waitForGoal(store, { repo: `${OWNER}/${REPO}`, goalId: String(i.number) }, ['LOOP_COMPLETE'], 90_000);
    const ends = await Promise.all(workers.map((w) => w.kill('SIGTERM')));
    expect(ends.map((e) => e.code)).toEqual([0, 0]);

    for (const i of issues) {
      expect(checkpointCommits(repo.bare, `goal/${i.number}-goal-${i.number - 100}`).map((c) => c.task)).toEqual(['a', 'b']);
      expect(fake.commentsOn(i.number).filter((c) => c.body.includes(STATUS_MARKER))).toHaveLength(1);
    }
    expect(fake.pulls).toHaveLength(GOALS);
    expect(new Set(fake.pulls.map((p) => p.head)).size).toBe(GOALS);

    const all = ends.flatMap((e) => spans(e.stderr)); // the logs, Probot's included, are on stderr
    const byWorker = new Map<string, number>();
    for (const s of all) byWorker.set(s.worker, (byWorker.get(s.worker) ?? 0) + 1);
    expect([...byWorker.values()].every((n) => n > 0)).toBe(true);
    expect(byWorker.size).toBe(2);
    expect(new Set(all.map((s) => s.goal)).size).toBe(GOALS);
    for (const a of all) {
      for (const b of all) {
        if (a !== b && a.goal === b.goal) expect(a.end <= b.start || b.end <= a.start, `${a.goal} worked twice at once`).toBe(true);
      }
    }
    expect(fake.violations).toEqual([]);
  });
});
