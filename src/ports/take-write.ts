import { setTimeout as delay } from 'node:timers/promises';
import { DEFAULT_WRITE_LIMITS, type WriteBudgetStore, type WriteLimits, type WritePriority } from './write-budget.js';

/** A write would wait longer than the caller allows: it is not sent. */
export class WriteBudgetTimeoutError extends Error {
  override name = 'WriteBudgetTimeoutError';
  constructor(
    readonly installation: string,
    readonly priority: WritePriority,
    readonly waitedMs: number,
    readonly neededMs: number,
  ) {
    super(`write budget of installation ${installation}: a ${priority} write would wait ${waitedMs + neededMs} ms in all, more than allowed`);
  }
}

export interface TakeWriteOptions {
  limits?: WriteLimits;
  /** Stops waiting: take rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The most this write may wait in all (default an hour and a minute: the longest window, and a pause). */
  maxWaitMs?: number;
  /** The decision time; omitted, the store's clock. Tests pass a virtual clock with a matching `sleep`. */
  clock?: () => number;
  /** Waits `ms`, rejecting when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * Extra wait, so that processes told the same wait do not all ask again at the same instant
   * (only one of them gets the freed slot; the rest are told to wait again). Default up to 250 ms.
   */
  jitterMs?: () => number;
}

export const DEFAULT_MAX_WRITE_WAIT_MS = 3_660_000;

/** A timer that rejects with the signal's own reason when aborted (node's rejects with a generic AbortError). */
async function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, signal ? { signal } : {});
  } catch (err) {
    signal?.throwIfAborted();
    throw err;
  }
}

/**
 * Takes one write of `priority` from `installation`'s budget, waiting as long as the store says
 * (and asking again, since another process may have taken the slot meanwhile). Resolves when the
 * write is recorded: the caller sends it then. Rejects with the signal's reason when aborted, or a
 * WriteBudgetTimeoutError, before waiting, when the wait would pass `maxWaitMs`.
 */
export async function takeWrite(store: WriteBudgetStore, installation: string, priority: WritePriority, opts: TakeWriteOptions = {}): Promise<void> {
  const { limits = DEFAULT_WRITE_LIMITS, signal, maxWaitMs = DEFAULT_MAX_WRITE_WAIT_MS, clock, sleep = realSleep, jitterMs = () => Math.random() * 250 } = opts;
  let waitedMs = 0;
  while (true) {
    signal?.throwIfAborted();
    const decision = await store.tryTakeWrite({ installation, priority, limits, ...(clock ? { atMs: clock() } : {}) });
    if (decision.take) return;
    const waitMs = decision.waitMs + Math.max(0, Math.round(jitterMs()));
    if (waitedMs + waitMs > maxWaitMs) throw new WriteBudgetTimeoutError(installation, priority, waitedMs, waitMs);
    await sleep(waitMs, signal);
    waitedMs += waitMs;
  }
}
