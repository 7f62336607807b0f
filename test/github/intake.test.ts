import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { goalEventFromPayload } from '../../src/github/handlers/payload-events.js';
import { createIntake } from '../../src/github/intake.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import { openSqliteStore } from '../../src/ledger/open-ledger.js';
import type { GoalEvent } from '../../src/steering/events.js';
import { tempDir } from '../helpers/temp.js';
import { issueCommentCreated } from '../helpers/webhook-payloads.js';

const stores: Store[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

const SPEC = { owner: 'octo', repo: 'app', installationId: 7 };

function command(id: string, n: number): GoalEvent {
  const payload = issueCommentCreated({ ...SPEC, issue: { number: 3, title: 'A goal' }, comment: { id: 100 + n, body: '/goal status' } });
  const event = goalEventFromPayload('issue_comment', id, payload);
  if (!event) throw new Error('not a goal event');
  return event;
}

/** An intake on the store whose GitHub fails every call, once `before` (what the test watches) is done. */
function intakeOn(store: Store, before: () => Promise<void>) {
  return createIntake({
    ledger: store.ledger,
    queue: store.queue,
    logger: pino({ level: 'silent' }),
    holder: 'test',
    auth: async () => {
      await before();
      throw new Error('GitHub is down');
    },
  });
}

describe('the intake', () => {
  it('while GitHub hangs on one event, a burst for the same repository waits for one more pass over the inbox: each event tried once, none given up', async () => {
    const store = openSqliteStore(`${await tempDir('goal-loop-intake-')}/ledger.db`);
    stores.push(store);
    let reads = 0;
    const unhandled = store.ledger.unhandledDeliveries.bind(store.ledger);
    store.ledger.unhandledDeliveries = () => {
      reads += 1;
      return unhandled();
    };
    // GitHub: the first call hangs until `down` is called, then every call fails at once.
    const tried: number[] = [];
    let down!: () => void;
    const outage = new Promise<void>((resolve) => {
      down = resolve;
    });
    const intake = intakeOn(store, async () => {
      tried.push(tried.length);
      await outage;
    });
    const ids = Array.from({ length: 30 }, (_, i) => `d-${String(i).padStart(2, '0')}`);
    await intake.accept(command(ids[0]!, 0));
    while (tried.length === 0) await new Promise((r) => setTimeout(r, 5));
    for (const [i, id] of ids.slice(1).entries()) await intake.accept(command(id, i + 1));
    down();
    await intake.idle();
    // One attempt each: an event's attempts are for the replays that follow an outage, not for one burst.
    expect(tried).toHaveLength(ids.length);
    expect((await store.ledger.unhandledDeliveries()).map((d) => d.id)).toEqual(ids);
    // The burst is read from the inbox once more, after the event in hand, not once per delivery.
    expect(reads).toBeLessThanOrEqual(3);
  });

  it('a drain that failed (the database away) leaves its entries to the next replay, which handles them', async () => {
    const store = openSqliteStore(`${await tempDir('goal-loop-intake-')}/ledger.db`);
    stores.push(store);
    const unhandled = store.ledger.unhandledDeliveries.bind(store.ledger);
    let away = true;
    store.ledger.unhandledDeliveries = () => (away ? Promise.reject(new Error('the database is away')) : unhandled());
    const tried: string[] = [];
    const intake = intakeOn(store, async () => {
      tried.push('auth');
    });
    await intake.accept(command('d-away', 0));
    await intake.idle();
    expect(tried).toEqual([]);
    away = false;
    expect(await intake.replayInbox()).toBe(1);
    await intake.idle();
    expect(tried).toEqual(['auth']);
  });
});
