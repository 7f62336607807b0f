import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { GoalLedger } from '../ports/goal-ledger.js';
import type { Inbox } from '../ports/inbox.js';
import type { Leases } from '../ports/leases.js';
import type { WorkQueue } from '../ports/queue.js';
import type { GoalEvent } from '../steering/events.js';
import { EventProcessor } from '../steering/handle/event-processor.js';
import { isGoalLeased, withLease } from '../worker/lease.js';
import { DEFAULT_LEASE_MS } from '../worker/worker-pool.js';
import type { Octokit } from './github-forge.js';
import { octokitIssueForgeFor } from './octokit-issue-forge.js';

/** Attempts at one event (across replays in this process) before it is dropped with an error. */
const MAX_EVENT_ATTEMPTS = 3;

export interface IntakeOptions {
  /** Goals (the event processor's), the inbox (deliveries) and leases (one repository's events at a time). */
  ledger: GoalLedger & Inbox & Leases;
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
  /** What a handler hands an event to: recorded in the inbox (a redelivery is dropped), then handled in the background. */
  accept(event: GoalEvent): Promise<void>;
  processor: EventProcessor;
  /** Handles inbox entries left unhandled (a crash, a lost server); safe to call any time. Returns how many it found. */
  replayInbox(): Promise<number>;
  /** Resolves when every accepted event is handled. */
  idle(): Promise<void>;
}

/**
 * Handlers only record and enqueue: the delivery and its parsed event go into the inbox in one
 * write (a redelivery is dropped there), the webhook is answered, and the event is then handled
 * (authorized, recorded, goal work enqueued) under its repository's lease, oldest first, so
 * commands on one goal are serialized and ordered even when they reach different servers.
 */
export function createIntake(opts: IntakeOptions): Intake {
  const { ledger, queue, logger } = opts;
  const processor = new EventProcessor({
    ledger,
    logger,
    forgeFor: octokitIssueForgeFor(opts.auth),
    schedule: async (key, mode, priority) => {
      await queue.enqueue({ key, mode, priority });
      opts.onEnqueued?.();
    },
    isRunning: (key) => isGoalLeased(ledger, key),
    cancel: (key) => queue.cancel(key),
  });
  const ttl = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const chains = new Map<string, Promise<void>>();
  /** Entries handed in (accepted or replayed) and not yet taken by a drain, with their repository. */
  const queued = new Map<string, string>();
  /** Per repository, the drain that has not started yet (see handle). */
  const waitingDrains = new Map<string, Promise<void>>();
  const failures = new Map<string, number>();

  /** Handles one inbox entry; the caller holds its repository's lease. */
  const handleOne = async (id: string, event: GoalEvent): Promise<void> => {
    try {
      await processor.handle(event);
    } catch (err) {
      // Left in the inbox for the next replay (GitHub or the database may be back by then),
      // unless it failed too often: a poisoned event must not be retried forever.
      const n = (failures.get(id) ?? 0) + 1;
      failures.set(id, n);
      if (n < MAX_EVENT_ATTEMPTS) return logger.warn({ err, delivery: id, type: event.type, attempt: n }, 'event failed; it will be retried');
      logger.error({ err, delivery: id, type: event.type, attempts: n }, 'event failed; giving up on it');
    }
    failures.delete(id);
    await ledger.markDeliveryHandled(id);
  };

  /**
   * Under the repository's lease, handles every unhandled entry of that repository, oldest
   * first: commands apply in the order they arrived, whichever server received them. An entry
   * that failed before is tried again only when it was handed in again (a replay).
   */
  const drain = async (repo: string): Promise<void> => {
    const holder = `${opts.holder}#${randomBytes(4).toString('hex')}`;
    await withLease(
      ledger,
      `events:${repo}`,
      holder,
      async () => {
        const handedIn = [...queued].filter(([, r]) => r === repo).map(([id]) => id);
        const pending = (await ledger.unhandledDeliveries()).filter((d) => repoOf(d.event as GoalEvent) === repo);
        // Handed in, and handled meanwhile by another server (or never stored): nothing left to take.
        const unhandled = new Set(pending.map((d) => d.id));
        for (const id of handedIn) if (!unhandled.has(id)) queued.delete(id);
        for (const entry of pending) {
          if ((failures.get(entry.id) ?? 0) > 0 && !queued.has(entry.id)) continue;
          queued.delete(entry.id);
          await handleOne(entry.id, entry.event as GoalEvent);
        }
      },
      { logger, ttlMs: ttl },
    );
  };

  /**
   * Hands an entry to its repository's next drain. One chain per repository in this process, so
   * one busy repository holds up no other, and at most one drain waits on it: the entries of a
   * burst that comes while one is handled (GitHub slow or down) are read in one more pass, not
   * one pass (and one more attempt at each of them) per delivery.
   */
  const handle = (id: string, event: GoalEvent): Promise<void> => {
    const repo = repoOf(event);
    queued.set(id, repo);
    const waiting = waitingDrains.get(repo);
    if (waiting !== undefined) return waiting;
    const next = (chains.get(repo) ?? Promise.resolve())
      .then(() => {
        waitingDrains.delete(repo);
        return drain(repo);
      })
      .catch((err: unknown) => logger.error({ err, delivery: id, type: event.type, repo }, 'events failed'))
      .finally(() => {
        if (chains.get(repo) === next) chains.delete(repo);
      });
    chains.set(repo, next);
    waitingDrains.set(repo, next);
    return next;
  };
  const record = deliveryBatcher(ledger);
  return {
    async accept(event) {
      if (!(await record(event.deliveryId, event))) return;
      void handle(event.deliveryId, event);
    },
    processor,
    async replayInbox() {
      const pending = await ledger.unhandledDeliveries();
      // Each is handed in again (a drain that failed left its entries queued); handle adds one drain per repository at most.
      for (const entry of pending) void handle(entry.id, entry.event as GoalEvent);
      return pending.length;
    },
    async idle() {
      while (chains.size > 0) await Promise.all(chains.values());
    },
  };
}

interface Waiting {
  id: string;
  event: GoalEvent;
  resolve: (stored: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * recordDelivery, grouped: the deliveries that arrive in one turn of the event loop are written
 * in one transaction once it ends (setImmediate), and each is answered after that commit, so
 * none is acknowledged before it is durable. In SQLite one commit per delivery rewrote the
 * table's and both indexes' pages each time (6 WAL pages a delivery, a checkpoint stalling the
 * process every ~150); in PostgreSQL it is one commit instead of many.
 */
function deliveryBatcher(inbox: Inbox): (id: string, event: GoalEvent) => Promise<boolean> {
  let batch: Waiting[] | undefined;
  const flush = () => {
    const entries = batch!;
    batch = undefined;
    inbox.recordDeliveries(entries).then(
      (stored) => {
        for (const [i, w] of entries.entries()) w.resolve(stored[i]!);
      },
      (err: unknown) => {
        for (const w of entries) w.reject(err);
      },
    );
  };
  return (id, event) =>
    new Promise((resolve, reject) => {
      if (!batch) {
        batch = [];
        setImmediate(flush);
      }
      batch.push({ id, event, resolve, reject });
    });
}

const repoOf = (e: Pick<GoalEvent, 'owner' | 'repo'>) => `${e.owner}/${e.repo}`;
