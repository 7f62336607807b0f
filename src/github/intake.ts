import type { Logger } from 'pino';
import type { ApplicationFunction } from 'probot';
import type { Ledger } from '../ports/ledger.js';
import type { WorkQueue } from '../ports/queue.js';
import { isGoalLeased, withLease } from '../worker/lease.js';
import { goalLoopApp } from './app.js';
import { EventProcessor } from './event-processor.js';
import type { GoalEvent } from './events.js';
import type { Octokit } from './github-forge.js';

export interface IntakeOptions {
  ledger: Ledger;
  queue: WorkQueue;
  logger: Logger;
  auth: (installationId: number) => Promise<Octokit>;
  /** Who this process is, for the per-repository command lease. */
  holder: string;
  /** Called after a goal job is enqueued (an in-process pool looks at once). */
  onEnqueued?: () => void;
}

/** The webhook side: record each delivery in the inbox, answer, then act on it. */
export interface Intake {
  appFn: ApplicationFunction;
  processor: EventProcessor;
  /** Handles inbox entries left unhandled by a crash; returns how many. */
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
  const handle = (id: string, event: GoalEvent) => {
    const run = () =>
      withLease(ledger, `events:${event.owner}/${event.repo}`, opts.holder, () => processor.handle(event), { logger }).then(() => ledger.markDeliveryHandled(id));
    inflight = inflight.then(run).catch((err: unknown) => logger.error({ err, delivery: id, type: event.type }, 'event failed'));
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
