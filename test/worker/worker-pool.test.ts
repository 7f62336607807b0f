import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { openSqliteStore, type Store } from '../../src/ledger/open-ledger.js';
import type { GoalKey } from '../../src/ports/ledger.js';
import type { QueuedJob } from '../../src/ports/queue.js';
import { goalLeaseName } from '../../src/worker/lease.js';
import { type JobContext, WorkerPool } from '../../src/worker/worker-pool.js';
import { silent } from '../helpers/github-app-harness.js';
import { rawSpec, rawTask } from '../helpers/spec-builders.js';
import { tempDir } from '../helpers/temp.js';

const key = (n: number): GoalKey => ({ repo: 'o/r', goalId: `g${n}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setup(): Promise<{ store: Store; path: string; goal(n: number, priority?: string): Promise<GoalKey> }> {
  const path = join(await tempDir('goal-pool-'), 'ledger.db');
  const store = openSqliteStore(path);
  onTestFinished(() => store.close());
  return {
    store,
    path,
    async goal(n, priority = 'P2') {
      await store.ledger.upsertGoal(key(n), { spec: validateGoalSpec(rawSpec([rawTask('a')], { goal_id: `g${n}` })), branch: `goal/g${n}`, priority });
      return key(n);
    },
  };
}

function pool(store: Store, work: (job: QueuedJob, ctx: JobContext) => Promise<void>, opts: { concurrency?: number; leaseMs?: number; workerId?: string } = {}): WorkerPool {
  const p = new WorkerPool({
    ledger: store.ledger,
    queue: store.queue,
    logger: silent,
    concurrency: opts.concurrency ?? 1,
    leaseMs: opts.leaseMs ?? 600,
    pollMs: 20,
    work,
    ...(opts.workerId ? { workerId: opts.workerId } : {}),
  });
  onTestFinished(() => p.close(0));
  return p;
}

describe('WorkerPool', () => {
  it("works at most `concurrency` goals at once, P0 first, and holds each goal's lease while it works", async () => {
    const s = await setup();
    for (let n = 1; n <= 5; n++) await s.store.queue.enqueue({ key: await s.goal(n), mode: 'run', priority: n === 4 ? 'P0' : 'P2' });
    let running = 0;
    let most = 0;
    const order: string[] = [];
    const leasedDuringWork: boolean[] = [];
    const p = pool(
      s.store,
      async (job) => {
        order.push(job.key.goalId);
        running += 1;
        most = Math.max(most, running);
        const lease = (await s.store.ledger.listLeases()).find((l) => l.name === goalLeaseName(job.key));
        leasedDuringWork.push(lease?.live === true && lease.holder === p.workerId);
        await sleep(80);
        running -= 1;
      },
      { concurrency: 2 },
    );
    p.start();
    await p.idle();
    expect(order).toHaveLength(5);
    expect(order[0]).toBe('g4');
    expect(most).toBe(2);
    expect(leasedDuringWork.every(Boolean)).toBe(true);
    expect(await s.store.ledger.listLeases()).toEqual([]); // released after the work
  });

  it('puts a job back while another worker holds the goal, and works it once that worker is done', async () => {
    const s = await setup();
    const k = await s.goal(1);
    expect(await s.store.ledger.acquireLease(goalLeaseName(k), 'someone-else', 60_000)).toBe(true);
    const worked: string[] = [];
    const p = pool(s.store, async (job) => void worked.push(job.key.goalId));
    await s.store.queue.enqueue({ key: k, mode: 'run', priority: 'P2' });
    p.start();
    await sleep(200);
    expect(worked).toEqual([]);
    expect((await s.store.queue.listQueued()).map((j) => j.key)).toEqual([k]); // deferred, not lost
    await s.store.ledger.releaseLease(goalLeaseName(k), 'someone-else');
    const end = Date.now() + 10_000;
    while (worked.length === 0 && Date.now() < end) await sleep(20);
    expect(worked).toEqual(['g1']);
  });

  it('resumes an unfinished goal whose worker died (its lease expired, nothing queued)', async () => {
    const s = await setup();
    const k = await s.goal(1);
    await s.store.ledger.setState(k, 'EXECUTING', 'test', null);
    await s.store.ledger.acquireLease(goalLeaseName(k), 'dead-worker', 300); // never renewed
    const worked: string[] = [];
    const p = pool(s.store, async (job) => void worked.push(`${job.key.goalId}:${job.mode}`), { leaseMs: 300 });
    p.start();
    const end = Date.now() + 10_000;
    while (worked.length === 0 && Date.now() < end) await sleep(20);
    expect(worked).toEqual(['g1:run']);
  });

  it('leaves resting goals alone, and drops a queued run of a goal a human paused since', async () => {
    const s = await setup();
    const done = await s.goal(1);
    await s.store.ledger.setState(done, 'LOOP_COMPLETE', 'test', null);
    const paused = await s.goal(2);
    await s.store.queue.enqueue({ key: paused, mode: 'run', priority: 'P2' });
    await s.store.ledger.setControl(paused, 'pause');
    await s.store.ledger.setState(paused, 'PAUSED', 'pause', null);
    const worked: string[] = [];
    const p = pool(s.store, async (job) => void worked.push(job.key.goalId), { leaseMs: 200 });
    p.start();
    await sleep(600); // several sweeps
    await p.idle();
    expect(worked).toEqual([]);
    expect(await s.store.queue.listQueued()).toEqual([]);
  });

  it('signals `abandon` when its lease is taken over, so the work stops without writing state', async () => {
    const s = await setup();
    const k = await s.goal(1);
    let abandoned = false;
    const p = pool(
      s.store,
      (_job, ctx) =>
        new Promise<void>((resolve) => {
          ctx.abandon.addEventListener('abort', () => {
            abandoned = true;
            resolve();
          });
        }),
      { leaseMs: 300 },
    );
    await s.store.queue.enqueue({ key: k, mode: 'run', priority: 'P2' });
    p.start();
    const name = goalLeaseName(k);
    const end = Date.now() + 5000;
    while (!(await s.store.ledger.listLeases()).some((l) => l.name === name && l.live) && Date.now() < end) await sleep(10);
    // Another worker takes the goal (as if this one had stalled past its lease).
    await s.store.ledger.releaseLease(name, p.workerId);
    expect(await s.store.ledger.acquireLease(name, 'usurper', 60_000)).toBe(true);
    while (!abandoned && Date.now() < end) await sleep(10);
    expect(abandoned).toBe(true);
    expect((await s.store.ledger.listLeases()).find((l) => l.name === name)?.holder).toBe('usurper');
  });

  it('abandons what is still running when closed past its grace time, and releases the leases', async () => {
    const s = await setup();
    const k = await s.goal(1);
    const p = pool(s.store, (_job, ctx) => new Promise<void>((resolve) => ctx.abandon.addEventListener('abort', () => resolve())));
    await s.store.queue.enqueue({ key: k, mode: 'run', priority: 'P2' });
    p.start();
    const end = Date.now() + 5000;
    while (p.activeCount === 0 && Date.now() < end) await sleep(10);
    await p.close(50);
    expect(p.activeCount).toBe(0);
    expect(await s.store.ledger.listLeases()).toEqual([]);
  });
});
