import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateGoalSpec } from '../../src/goal/parse.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import type { GoalKey } from '../../src/ports/ledger.js';
import { rawSpec, rawTask } from './spec-builders.js';

const goal = (n: number): GoalKey => ({ repo: 'octo/app', goalId: `g-${n}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The behaviour every store (SQLite, PostgreSQL) must share: the delivery inbox, leases and
 * the work queue. `open` returns a fresh, empty store; `openAgain` a second connection to it.
 */
export function describeStoreContract(name: string, open: () => Promise<Store>, openAgain: () => Promise<Store>): void {
  describe(`${name} store contract`, () => {
    let store: Store;
    const extra: Store[] = [];
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      for (const s of extra.splice(0)) await s.close();
      await store.close();
    });
    const second = async () => {
      const s = await openAgain();
      extra.push(s);
      return s;
    };

    describe('inbox', () => {
      it('deduplicates deliveries and keeps the event until it is handled', async () => {
        const l = store.ledger;
        expect(await l.recordDelivery('d-1', { type: 'labeled', n: 1 })).toBe(true);
        expect(await l.recordDelivery('d-1', { type: 'labeled', n: 1 })).toBe(false);
        expect(await l.recordDelivery('d-1', { type: 'other' })).toBe(false);
        expect(await l.recordDelivery('d-2', { type: 'command', n: 2 })).toBe(true);
        expect(await l.recordDelivery('d-3')).toBe(true); // an id only: nothing to replay
        expect((await l.unhandledDeliveries()).map((e) => [e.id, e.event])).toEqual([
          ['d-1', { type: 'labeled', n: 1 }],
          ['d-2', { type: 'command', n: 2 }],
        ]);
        await l.markDeliveryHandled('d-1');
        expect((await l.unhandledDeliveries()).map((e) => e.id)).toEqual(['d-2']);
        expect(await l.recordDelivery('d-1', { type: 'labeled' })).toBe(false);
      });

      it('records a batch in one go, each entry answered as recordDelivery would', async () => {
        const l = store.ledger;
        await l.recordDelivery('b-0', { n: 0 });
        expect(await l.recordDeliveries([])).toEqual([]);
        expect(
          await l.recordDeliveries([
            { id: 'b-1', event: { n: 1 } },
            { id: 'b-0', event: { n: 9 } },
            { id: 'b-1', event: { n: 9 } },
            { id: 'b-2', event: { n: 2 } },
          ]),
        ).toEqual([true, false, false, true]);
        expect((await l.unhandledDeliveries()).map((e) => [e.id, e.event])).toEqual([
          ['b-0', { n: 0 }],
          ['b-1', { n: 1 }],
          ['b-2', { n: 2 }],
        ]);
      });

      it('is shared by a second connection', async () => {
        await store.ledger.recordDelivery('d-9', { x: 1 });
        const other = await second();
        expect(await other.ledger.recordDelivery('d-9', { x: 1 })).toBe(false);
        expect((await other.ledger.unhandledDeliveries()).map((e) => e.id)).toEqual(['d-9']);
      });
    });

    describe('leases', () => {
      it('gives a lease to one holder until it expires or is released', async () => {
        const l = store.ledger;
        const other = (await second()).ledger;
        expect(await l.acquireLease('goal:a', 'w1', 10_000)).toBe(true);
        expect(await other.acquireLease('goal:a', 'w2', 10_000)).toBe(false);
        expect(await l.acquireLease('goal:a', 'w1', 10_000)).toBe(true); // re-entrant for its holder
        expect(await other.renewLease('goal:a', 'w2', 10_000)).toBe(false);
        expect(await l.renewLease('goal:a', 'w1', 10_000)).toBe(true);
        await other.releaseLease('goal:a', 'w2'); // not the holder: no effect
        expect(await other.acquireLease('goal:a', 'w2', 10_000)).toBe(false);
        await l.releaseLease('goal:a', 'w1');
        expect(await other.acquireLease('goal:a', 'w2', 10_000)).toBe(true);
        const [lease] = await l.listLeases();
        expect(lease).toMatchObject({ name: 'goal:a', holder: 'w2', live: true });
      });

      it('lets another holder take an expired lease, after which the old holder cannot renew', async () => {
        const l = store.ledger;
        expect(await l.acquireLease('goal:b', 'w1', 150)).toBe(true);
        expect(await l.acquireLease('goal:b', 'w2', 150)).toBe(false);
        await sleep(300);
        expect((await l.listLeases()).find((x) => x.name === 'goal:b')).toMatchObject({ holder: 'w1', live: false });
        expect(await l.acquireLease('goal:b', 'w2', 10_000)).toBe(true);
        expect(await l.renewLease('goal:b', 'w1', 10_000)).toBe(false);
        const lease = (await l.listLeases()).find((x) => x.name === 'goal:b')!;
        expect(lease.holder).toBe('w2');
        expect(Date.parse(lease.expiresAt)).toBeGreaterThan(Date.parse(lease.heartbeatAt));
      });

      it('renews an expired lease nobody else took', async () => {
        const l = store.ledger;
        expect(await l.acquireLease('goal:c', 'w1', 100)).toBe(true);
        await sleep(200);
        expect(await l.renewLease('goal:c', 'w1', 10_000)).toBe(true);
        expect(await l.acquireLease('goal:c', 'w2', 10_000)).toBe(false);
      });

      it('prunes leases long expired and handled deliveries long past, and nothing else', async () => {
        const l = store.ledger;
        await l.acquireLease('old', 'w1', 50);
        await l.acquireLease('live', 'w1', 60_000);
        await l.recordDelivery('handled', { n: 1 });
        await l.markDeliveryHandled('handled');
        await l.recordDelivery('pending', { n: 2 });
        await sleep(150);
        expect(await l.prune({ expiredLeasesMs: 60_000, handledDeliveriesMs: 60_000 })).toEqual({ leases: 0, deliveries: 0, effects: 0 });
        expect(await l.prune({ expiredLeasesMs: 50, handledDeliveriesMs: 50 })).toEqual({ leases: 1, deliveries: 1, effects: 0 });
        expect((await l.listLeases()).map((x) => x.name)).toEqual(['live']);
        expect((await l.unhandledDeliveries()).map((d) => d.id)).toEqual(['pending']);
        expect(await l.recordDelivery('pending', { n: 2 })).toBe(false); // unhandled ones keep deduplicating
      });

      it('never grants one lease to two racing holders', async () => {
        const conns = [store.ledger, (await second()).ledger, (await second()).ledger];
        for (let round = 0; round < 5; round++) {
          const wins = await Promise.all(conns.flatMap((l, i) => [l.acquireLease(`race:${round}`, `w${i}a`, 10_000), l.acquireLease(`race:${round}`, `w${i}b`, 10_000)]));
          expect(wins.filter(Boolean)).toHaveLength(1);
        }
      });
    });

    describe('work queue', () => {
      it('hands out P0 before P3, then the oldest', async () => {
        const q = store.queue;
        await q.enqueue({ key: goal(1), mode: 'run', priority: 'P2' });
        await sleep(5);
        await q.enqueue({ key: goal(2), mode: 'run', priority: 'P0' });
        await sleep(5);
        await q.enqueue({ key: goal(3), mode: 'run', priority: 'P2' });
        await sleep(5);
        await q.enqueue({ key: goal(4), mode: 'run', priority: 'P3' });
        const order: string[] = [];
        for (let job = await q.claim(); job; job = await q.claim()) order.push(job.key.goalId);
        expect(order).toEqual(['g-2', 'g-1', 'g-3', 'g-4']);
        expect(await q.listQueued()).toEqual([]);
      });

      it('keeps one job per goal: the stronger mode, the more urgent priority, the earlier age', async () => {
        const q = store.queue;
        await q.enqueue({ key: goal(1), mode: 'status', priority: 'P3' });
        await sleep(5);
        await q.enqueue({ key: goal(2), mode: 'run', priority: 'P1' });
        await q.enqueue({ key: goal(1), mode: 'run', priority: 'P1' });
        await q.enqueue({ key: goal(1), mode: 'plan', priority: 'P2' });
        const queued = await q.listQueued();
        expect(queued.map((j) => [j.key.goalId, j.mode, j.priority])).toEqual([
          ['g-1', 'run', 'P1'],
          ['g-2', 'run', 'P1'],
        ]);
        const first = await q.claim();
        expect(first).toMatchObject({ key: goal(1), mode: 'run', priority: 'P1' });
      });

      it('holds a delayed job back until it is due', async () => {
        const q = store.queue;
        await q.enqueue({ key: goal(1), mode: 'run', priority: 'P0' }, { delayMs: 400 });
        await q.enqueue({ key: goal(2), mode: 'run', priority: 'P3' });
        expect((await q.claim())?.key).toEqual(goal(2));
        expect(await q.claim()).toBeUndefined();
        const [waiting] = await q.listQueued();
        expect(waiting?.notBefore).not.toBeNull();
        await sleep(500);
        expect((await q.claim())?.key).toEqual(goal(1));
      });

      it('cancels a pending job', async () => {
        const q = store.queue;
        await q.enqueue({ key: goal(1), mode: 'run', priority: 'P2' });
        await q.enqueue({ key: goal(2), mode: 'run', priority: 'P2' });
        await q.cancel(goal(1));
        expect((await q.listQueued()).map((j) => j.key.goalId)).toEqual(['g-2']);
      });

      it('never gives one job to two claimers across connections', async () => {
        const queues = [store.queue, (await second()).queue, (await second()).queue];
        for (let n = 0; n < 30; n++) await store.queue.enqueue({ key: goal(n), mode: 'run', priority: `P${n % 4}` });
        const claimed: string[] = [];
        await Promise.all(
          queues.map(async (q) => {
            for (let job = await q.claim(); job; job = await q.claim()) claimed.push(job.key.goalId);
          }),
        );
        expect(claimed).toHaveLength(30);
        expect(new Set(claimed).size).toBe(30);
      });
    });

    it('keeps goals in the ledger beside the queue', async () => {
      const spec = validateGoalSpec(rawSpec([rawTask('a')], { goal_id: 'g-1' }));
      await store.ledger.upsertGoal(goal(1), { spec, branch: 'goal/g-1', priority: 'P1' });
      await store.queue.enqueue({ key: goal(1), mode: 'run', priority: 'P1' });
      const other = await second();
      expect((await other.ledger.getGoal(goal(1)))?.priority).toBe('P1');
      expect((await other.queue.claim())?.key).toEqual(goal(1));
    });
  });
}
