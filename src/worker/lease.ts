import type { Logger } from 'pino';
import type { GoalKey } from '../ports/goal-ledger.js';
import type { Leases } from '../ports/leases.js';

/** The lease a worker holds while it works a goal. */
export const goalLeaseName = (key: GoalKey) => `goal:${key.repo}#${key.goalId}`;

/**
 * The holder a worker's sweep uses while it performs a goal's pending effects: not the worker's
 * own id, so a job of that worker cannot share (and then lose) the lease; and not a run.
 */
export const settlingHolder = (workerId: string) => `${workerId}#effects`;
/** The holder the queue report writes a waiting goal's status under: not a run either (it ends like a settling one). */
export const reportHolder = (id: string) => `${id}#queue-report#effects`;
const isSettling = (holder: string) => holder.endsWith('#effects');
/** A goal lease's holder is a run (not a sweep performing effects, not the queue report). */
export const isRunHolder = (holder: string) => !isSettling(holder);

/** True when some worker runs the goal right now (a live lease held by a run, not by a sweep performing its effects). */
export async function isGoalLeased(ledger: Leases, key: GoalKey): Promise<boolean> {
  const name = goalLeaseName(key);
  return (await ledger.listLeases()).some((l) => l.name === name && l.live && isRunHolder(l.holder));
}

export interface HeldLease {
  /** Aborts when the heartbeat finds the lease lost (expired and taken, or deleted). */
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

/**
 * Keeps a lease alive with a heartbeat every third of its ttl. A failed heartbeat write is
 * retried on the next beat; only a definite "not yours any more" counts as lost.
 */
export function keepLease(ledger: Leases, name: string, holder: string, ttlMs: number, logger: Logger): HeldLease {
  const lost = new AbortController();
  let released = false;
  let renewedAt = Date.now();
  const giveUp = (why: string) => {
    if (released || lost.signal.aborted) return;
    logger.warn({ lease: name, holder }, `lease lost: ${why}`);
    lost.abort();
  };
  const beat = setInterval(
    () => {
      ledger.renewLease(name, holder, ttlMs).then(
        (ok) => {
          if (ok) renewedAt = Date.now();
          else giveUp('another worker took over');
        },
        (err: unknown) => {
          logger.warn({ err, lease: name }, 'lease heartbeat failed; retrying');
          // Unrenewed for a whole ttl, the lease may be someone else's by now: stop acting on it.
          if (Date.now() - renewedAt >= ttlMs) giveUp('no heartbeat reached the store for a whole lease');
        },
      );
    },
    Math.max(50, Math.floor(ttlMs / 3)),
  );
  beat.unref();
  return {
    lost: lost.signal,
    async release() {
      released = true;
      clearInterval(beat);
      await ledger.releaseLease(name, holder).catch((err: unknown) => logger.warn({ err, lease: name }, 'lease release failed; it will expire'));
    },
  };
}

/**
 * Runs `fn` while holding the named lease, waiting for it if another holder has it: serializes
 * short critical sections (e.g. two commands on one goal) across processes.
 */
export async function withLease<T>(ledger: Leases, name: string, holder: string, fn: () => Promise<T>, opts: { ttlMs?: number; logger: Logger; pollMs?: number }): Promise<T> {
  const ttlMs = opts.ttlMs ?? 30_000;
  while (!(await ledger.acquireLease(name, holder, ttlMs))) await new Promise((r) => setTimeout(r, opts.pollMs ?? 100));
  const held = keepLease(ledger, name, holder, ttlMs, opts.logger);
  try {
    return await fn();
  } finally {
    await held.release();
  }
}
