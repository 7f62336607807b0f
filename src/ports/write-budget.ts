/**
 * One budget of GitHub writes per installation, shared by every process that opens the same store
 * (GitHub asks integrations to stay under about 80 content-creating requests a minute and 500 an
 * hour, per installation, whichever process sends them). Reads are not budgeted.
 */

/**
 * Who goes first when the budget is tight: `urgent` (escalations, approval requests, review
 * replies), `normal` (PRs, check runs, labels, new comments), `background` (status-comment
 * edits, which coalesce: a later edit carries everything an earlier one would have).
 */
export type WritePriority = 'urgent' | 'normal' | 'background';

export const WRITE_PRIORITIES: readonly WritePriority[] = ['urgent', 'normal', 'background'];

/** At most `max` writes in any `ms` milliseconds. */
export interface WriteWindow {
  ms: number;
  max: number;
}

export interface WriteLimits {
  /** Every window holds at once (a minute and an hour by default). */
  windows: readonly WriteWindow[];
  /**
   * The part of each window a priority may fill. A write of that priority is held back while its
   * window already holds `floor(max × share)` writes (at least 1), whoever sent them. A lower
   * priority sees a lower ceiling, so the room above it stays free for higher ones without a
   * central queue: each process decides from the shared count alone.
   */
  shares: Readonly<Record<WritePriority, number>>;
}

/**
 * 70 a minute and 450 an hour: a margin under GitHub's 80 and 500, which are guidance, not an
 * exact count it publishes. Status edits may fill half of each window: they coalesce, so holding
 * them back loses nothing but staleness. PRs, check runs and labels may fill 80 %: the last fifth
 * (14 a minute, 90 an hour) stays for escalations and approval requests, which a person is
 * waiting on.
 */
export const DEFAULT_WRITE_LIMITS: WriteLimits = {
  windows: [
    { ms: 60_000, max: 70 },
    { ms: 3_600_000, max: 450 },
  ],
  shares: { urgent: 1, normal: 0.8, background: 0.5 },
};

/** Take the write now, or wait `waitMs` and ask again. */
export type WriteDecision = { take: true } | { take: false; waitMs: number };

export interface WriteRequest {
  installation: string;
  priority: WritePriority;
  limits: WriteLimits;
  /**
   * The time of the decision (epoch ms); omitted, the store's clock (the database's for
   * PostgreSQL). A time before the installation's latest write counts as that write's time: a
   * caller whose clock lags cannot place a write in a window others have filled (or trimmed).
   */
  atMs?: number;
}

/** The store side: each call is one atomic decision across every process sharing the store. */
export interface WriteBudgetStore {
  /** Decides by `decideWrite` and, when it says take, records the write in the same atomic step. */
  tryTakeWrite(request: WriteRequest): Promise<WriteDecision>;
  /**
   * Holds every write of `installation` for `forMs` from now (a secondary rate limit or a
   * retry-after); a pause that already ends later stays as it is. `atMs` as in WriteRequest.
   */
  pauseWrites(installation: string, forMs: number, atMs?: number): Promise<void>;
  /** Drops the writes recorded more than `keepMs` ago, of every installation; returns how many. */
  trimWrites(keepMs: number, atMs?: number): Promise<number>;
}

/** The ceiling `priority` sees in `window`. */
export const ceilingOf = (window: WriteWindow, share: number): number => Math.max(1, Math.floor(window.max * share));

/** The longest window: writes older than this never count again. */
export const longestWindowMs = (limits: WriteLimits): number => Math.max(0, ...limits.windows.map((w) => w.ms));

/**
 * The rule, pure: at `nowMs`, with the installation paused until `pausedUntilMs` and its writes
 * at `recentMs` (any order), may a write of `priority` go now? A write at time t counts in a
 * window of `ms` while now < t + ms. When it may not, `waitMs` is how long until it may, if
 * nobody else writes meanwhile (the caller asks again then).
 */
export function decideWrite(input: { nowMs: number; pausedUntilMs: number; recentMs: readonly number[]; priority: WritePriority; limits: WriteLimits }): WriteDecision {
  const { nowMs, limits } = input;
  let waitMs = Math.max(0, input.pausedUntilMs - nowMs);
  const share = limits.shares[input.priority];
  for (const window of limits.windows) {
    const inWindow = input.recentMs.filter((t) => nowMs < t + window.ms).sort((a, b) => a - b);
    const ceiling = ceilingOf(window, share);
    if (inWindow.length < ceiling) continue;
    // The oldest writes must leave the window until one fewer than the ceiling remain.
    const leaving = inWindow.at(-ceiling)!;
    waitMs = Math.max(waitMs, leaving + window.ms - nowMs);
  }
  return waitMs > 0 ? { take: false, waitMs: Math.ceil(waitMs) } : { take: true };
}

/** Limits that make sense: positive windows and maxima, shares in (0, 1] that do not rise as priority falls. */
export function checkWriteLimits(limits: WriteLimits): WriteLimits {
  for (const w of limits.windows) {
    if (!(Number.isInteger(w.ms) && w.ms > 0 && Number.isInteger(w.max) && w.max > 0)) throw new Error(`write budget: a window needs a positive whole ms and max (got ${w.ms} ms, ${w.max})`);
  }
  const { urgent, normal, background } = limits.shares;
  for (const s of [urgent, normal, background]) {
    if (!(s > 0 && s <= 1)) throw new Error(`write budget: a share is a fraction in (0, 1] (got ${s})`);
  }
  if (!(background <= normal && normal <= urgent)) throw new Error('write budget: shares must not rise as priority falls (background ≤ normal ≤ urgent)');
  return limits;
}
