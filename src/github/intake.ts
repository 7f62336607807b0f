import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { ApplicationFunction } from 'probot';
import type { Ledger } from '../ports/ledger.js';
import type { WorkQueue } from '../ports/queue.js';
import { isGoalLeased, keepLease, withLease } from '../worker/lease.js';
import { DEFAULT_LEASE_MS } from '../worker/worker-pool.js';
import { goalLoopApp } from './app.js';
import { EventProcessor } from './event-processor.js';
import type { GoalEvent } from './events.js';
import type { Octokit } from './github-forge.js';

/** Attempts at one event (across replays in this process) before it is dropped with an error. */
const MAX_EVENT_ATTEMPTS = 3;

export interface IntakeOptions {
  ledger: Ledger;
  queue: WorkQueue;
  logger: Logger;
  auth: (installationId: number) => Promise<Octokit>;
  /** Who this process is, for the per-repository command lease. */
  holder: string;
  /** Lease time to live: a server that dies handling a delivery leaves it to others after this. */
  leaseMs?: number;
  /** Called after a goal job is enqueued (an in-process pool looks at once). */
  onEnqueued?: () => void;
}

/** The webhook side: record each delivery in the inbox, answer, then act on it. */
export interface Intake {
  appFn: ApplicationFunction;
  processor: EventProcessor;
  /** Handles inbox entries left unhandled (a crash, a lost server); safe to call any time. Returns how many it found. */
  replayInbox(): Promise<number>;
  /** Resolves when every accepted event is handled. */
  idle(): Promise<void>;
}

/**
 * Handlers only record and enqueue: the delivery and its parsed event go into the inbox in one
 * write (a redelivery is dropped there), the webhook is answered, and the event is then handled
 * (authorized, recorded, goal work enqueued) under its repository's lease, so two commands on
 * one goal are serialized even when they reach different servers.
 */
export function createIntake(opts: IntakeOptions): Intake {
  const { ledger, queue, logger } = opts;
  const processor = new EventProcessor({
    ledger,
    logger,
    auth: opts.auth,
    schedule: async (key, mode, priority) => {
      await queue.enqueue({ key, mode, priority });
      opts.onEnqueued?.();
    },
    isRunning: (key) => isGoalLeased(ledger, key),
    cancel: (key) => queue.cancel(key),
  });
  let inflight = Promise.resolve();
  const chained = new Set<string>();
  const failures = new Map<string, number>();
  const handle = (id: string, event: GoalEvent) => {
    if (chained.has(id)) return inflight; // already waiting its turn in this process
    chained.add(id);
    const run = async () => {
      // One handler per delivery, across servers and replays: whoever holds its lease.
      const claim = `delivery:${id}`;
      const holder = `${opts.holder}#${randomBytes(4).toString('hex')}`;
      const ttl = opts.leaseMs ?? DEFAULT_LEASE_MS;
      if (!(await ledger.acquireLease(claim, holder, ttl))) return;
      const held = keepLease(ledger, claim, holder, ttl, logger);
      try {
        if (!(await ledger.unhandledDeliveries()).some((d) => d.id === id)) return; // handled meanwhile
        try {
          await withLease(ledger, `events:${event.owner}/${event.repo}`, holder, () => processor.handle(event), { logger, ttlMs: ttl });
        } catch (err) {
          // Left in the inbox for the next replay (GitHub or the database may be back by then),
          // unless it failed too often: a poisoned event must not be retried forever.
          const n = (failures.get(id) ?? 0) + 1;
          failures.set(id, n);
          if (n < MAX_EVENT_ATTEMPTS) {
            logger.warn({ err, delivery: id, type: event.type, attempt: n }, 'event failed; it will be retried');
            return;
          }
          logger.error({ err, delivery: id, type: event.type, attempts: n }, 'event failed; giving up on it');
        }
        failures.delete(id);
        await ledger.markDeliveryHandled(id);
      } finally {
        await held.release();
      }
    };
    inflight = inflight
      .then(run)
      .catch((err: unknown) => logger.error({ err, delivery: id, type: event.type }, 'event failed'))
      .finally(() => chained.delete(id));
    return inflight;
  };
  return {
    appFn: goalLoopApp(async (event) => {
      if (!(await ledger.recordDelivery(event.deliveryId, event))) return;
      void handle(event.deliveryId, event);
    }),
    processor,
    async replayInbox() {
      const pending = await ledger.unhandledDeliveries();
      for (const entry of pending) void handle(entry.id, entry.event as GoalEvent);
      return pending.length;
    },
    async idle() {
      for (;;) {
        const seen = inflight;
        await seen;
        if (seen === inflight) return;
      }
    },
  };
}
