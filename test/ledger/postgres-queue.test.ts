import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/ledger/open-ledger.js';
import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import { bossPriority } from '../../src/ledger/postgres/pgboss-queue.js';
import type { GoalKey } from '../../src/ports/ledger.js';
import { adminQuery, freshDatabase } from '../helpers/postgres.js';

const goal = (n: number): GoalKey => ({ repo: 'octo/app', goalId: `g-${n}` });

/** What pg-boss holds for our queue, by state. */
async function bossJobs(url: string): Promise<Record<string, number>> {
  const { rows } = await adminQuery(url, `SELECT state::text, count(*)::int AS n FROM pgboss.job WHERE name = 'goal-work' GROUP BY 1`);
  return Object.fromEntries((rows as Array<{ state: string; n: number }>).map((r) => [r.state, r.n]));
}

describe('PgBossWorkQueue (beyond the store contract)', () => {
  const open: Store[] = [];
  let url = '';
  const store = async (fresh = false) => {
    if (fresh || !url) url = await freshDatabase();
    const s = await openPostgresStore(url);
    open.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    url = '';
  });

  it('maps P0 to the highest pg-boss priority', () => {
    expect([0, 1, 2, 3].map((n) => bossPriority(`P${n}`))).toEqual([9, 8, 7, 6]);
    expect(bossPriority('urgent')).toBe(bossPriority('P2'));
  });

  it('a request without delay makes a delayed job due now', async () => {
    const q = (await store(true)).queue;
    await q.enqueue({ key: goal(1), mode: 'status', priority: 'P2' }, { delayMs: 60_000 });
    expect(await q.claim()).toBeUndefined();
    await q.enqueue({ key: goal(1), mode: 'status', priority: 'P2' });
    expect((await q.claim())?.key).toEqual(goal(1));
    await q.enqueue({ key: goal(2), mode: 'run', priority: 'P2' });
    await q.enqueue({ key: goal(2), mode: 'run', priority: 'P2' }, { delayMs: 60_000 }); // never postpones
    expect((await q.claim())?.key).toEqual(goal(2));
  });

  it('coalesces concurrent requests from several processes into one pg-boss job per goal', async () => {
    const stores = [await store(true), await store(), await store()];
    await Promise.all(stores.flatMap((s, i) => Array.from({ length: 10 }, (_, n) => s.queue.enqueue({ key: goal(n), mode: i === 2 ? 'run' : 'status', priority: `P${(n + i) % 4}` }))));
    const queued = await stores[0]!.queue.listQueued();
    expect(queued).toHaveLength(10);
    expect(queued.every((j) => j.mode === 'run')).toBe(true);
    expect(await bossJobs(url)).toEqual({ created: 10 });
    // Each goal keeps its most urgent priority, and pg-boss hands them out by it.
    const claimed: string[] = [];
    for (let job = await stores[1]!.queue.claim(); job; job = await stores[1]!.queue.claim()) {
      const n = Number(job.key.goalId.slice(2));
      expect(job.priority).toBe(`P${Math.min(n % 4, (n + 1) % 4, (n + 2) % 4)}`);
      claimed.push(job.priority);
    }
    expect(claimed).toHaveLength(10);
    expect(claimed).toEqual([...claimed].sort());
    expect(await bossJobs(url)).toEqual({ completed: 10 });
  });

  it('claims in the order listQueued shows', async () => {
    const q = (await store(true)).queue;
    for (let n = 0; n < 12; n++) {
      const delay = n % 5 === 0 ? { delayMs: 60_000 } : {};
      await q.enqueue({ key: goal(n), mode: 'run', priority: `P${(n * 7) % 4}` }, delay);
      await q.enqueue({ key: goal(n), mode: 'plan', priority: 'P3' }, delay);
    }
    const listed = (await q.listQueued()).filter((j) => j.notBefore === null).map((j) => j.key.goalId);
    const claimed: string[] = [];
    for (let job = await q.claim(); job; job = await q.claim()) claimed.push(job.key.goalId);
    expect(claimed).toEqual(listed);
  });

  it('cancels the pg-boss job too, and a job whose request is gone is skipped', async () => {
    const s = await store(true);
    await s.queue.enqueue({ key: goal(1), mode: 'run', priority: 'P0' });
    await s.queue.cancel(goal(1));
    expect(await bossJobs(url)).toEqual({ cancelled: 1 });
    // A request lost without its job (a cancel that died before pg-boss heard of it).
    await s.queue.enqueue({ key: goal(2), mode: 'run', priority: 'P0' });
    await s.queue.enqueue({ key: goal(3), mode: 'run', priority: 'P3' });
    await adminQuery(url, `DELETE FROM goal_loop.goal_jobs WHERE goal_id = 'g-2'`);
    expect((await s.queue.claim())?.key).toEqual(goal(3));
    expect(await s.queue.claim()).toBeUndefined();
    expect(await bossJobs(url)).toEqual({ cancelled: 1, completed: 2 });
  });

  it('gives a request whose pg-boss job vanished a new job on the next enqueue', async () => {
    const s = await store(true);
    await s.queue.enqueue({ key: goal(1), mode: 'run', priority: 'P1' });
    await adminQuery(url, `DELETE FROM pgboss.job WHERE name = 'goal-work'`);
    expect(await s.queue.claim()).toBeUndefined();
    await s.queue.enqueue({ key: goal(1), mode: 'run', priority: 'P1' });
    expect(await bossJobs(url)).toEqual({ created: 1 });
    expect((await s.queue.claim())?.key).toEqual(goal(1));
  });

  it('an enqueue does not wait for a claim in progress, and the claim hands out the merged request', async () => {
    const s = await store(true);
    await s.queue.enqueue({ key: goal(1), mode: 'status', priority: 'P3' });
    // A claimer elsewhere has fetched the job (row locked) but not finished.
    const claimer = new pg.Client({ connectionString: url });
    await claimer.connect();
    try {
      await claimer.query('BEGIN');
      await claimer.query(`SELECT id FROM pgboss.job WHERE name = 'goal-work' FOR UPDATE`);
      // A wait for that lock would end only in the pool's query timeout, an error: the claimer lets go after this returns.
      await s.queue.enqueue({ key: goal(1), mode: 'run', priority: 'P0' });
      await claimer.query('ROLLBACK');
    } finally {
      await claimer.end();
    }
    expect(await s.queue.claim()).toMatchObject({ key: goal(1), mode: 'run', priority: 'P0' });
  });

  it('leaves the job queued when a claim fails midway', async () => {
    const s = await store(true);
    await s.queue.enqueue({ key: goal(1), mode: 'run', priority: 'P1' });
    // The claim's DELETE fails after pg-boss handed the job out, inside the same transaction.
    await adminQuery(
      url,
      `CREATE TABLE goal_loop.fail_claims (n INT);
       INSERT INTO goal_loop.fail_claims VALUES (1);
       CREATE FUNCTION goal_loop.fail_claim() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF EXISTS (SELECT FROM goal_loop.fail_claims) THEN RAISE EXCEPTION 'claim interrupted'; END IF; RETURN OLD; END $$;
       CREATE TRIGGER fail_claim BEFORE DELETE ON goal_loop.goal_jobs FOR EACH ROW EXECUTE FUNCTION goal_loop.fail_claim();`,
    );
    await expect(s.queue.claim()).rejects.toThrow(/claim interrupted/);
    expect(await bossJobs(url)).toEqual({ created: 1 });
    expect((await s.queue.listQueued()).map((j) => j.key)).toEqual([goal(1)]);
    await adminQuery(url, 'DELETE FROM goal_loop.fail_claims');
    expect((await s.queue.claim())?.key).toEqual(goal(1));
    expect(await bossJobs(url)).toEqual({ completed: 1 });
  });
});
