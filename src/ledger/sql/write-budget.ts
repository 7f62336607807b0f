import { decideWrite, longestWindowMs, type WriteDecision, type WriteRequest } from '../../ports/write-budget.js';
import { count, firstRow, type Program, rows } from './program.js';
import { EPOCH_ZERO, epochAt, epochTime, FOR_UPDATE, sql } from './statement.js';

/**
 * The write budget (ports/write-budget.ts) as programs for either store. `tryTakeWrite` runs in one
 * transaction that locks the installation's row in write_budgets (SQLite: the IMMEDIATE
 * transaction's file lock; PostgreSQL: FOR UPDATE), so deciders in every process take turns.
 */

/** An epoch column as either store returns it: milliseconds (SQLite) or ISO text (PostgreSQL). */
const toMs = (t: number | string): number => (typeof t === 'number' ? t : Date.parse(t));

/** The caller's instant, or the store's clock. */
const instant = (atMs: number | undefined, offsetMs = 0) => (atMs === undefined ? epochTime(offsetMs) : epochAt(atMs + offsetMs));

export function* tryTakeWrite({ installation, priority, limits, atMs }: WriteRequest): Program<WriteDecision> {
  // The row exists before it is locked; racing first inserts serialize on its key.
  yield* count(sql`INSERT INTO write_budgets (installation, paused_until) VALUES (${installation}, ${EPOCH_ZERO}) ON CONFLICT (installation) DO NOTHING`);
  const budget = yield* firstRow<{ paused_until: number | string; now: number | string }>(
    sql`SELECT paused_until, ${instant(atMs)} AS now FROM write_budgets WHERE installation = ${installation} ${FOR_UPDATE}`,
  );
  // Never before the latest write: a caller whose clock lags decides, and writes, at that time.
  const latest = yield* firstRow<{ at: number | string | null }>(sql`SELECT max(at) AS at FROM write_events WHERE installation = ${installation}`);
  const nowMs = Math.max(toMs(budget!.now), latest?.at === null || latest?.at === undefined ? Number.NEGATIVE_INFINITY : toMs(latest.at));
  const horizon = epochAt(nowMs - longestWindowMs(limits));
  // Older writes never count again: dropped here, so an installation's rows stay within one window.
  yield* count(sql`DELETE FROM write_events WHERE installation = ${installation} AND at <= ${horizon}`);
  const recent = yield* rows<{ at: number | string }>(sql`SELECT at FROM write_events WHERE installation = ${installation} AND at > ${horizon}`);
  const decision = decideWrite({ nowMs, pausedUntilMs: toMs(budget!.paused_until), recentMs: recent.map((r) => toMs(r.at)), priority, limits });
  if (decision.take) yield* count(sql`INSERT INTO write_events (installation, at) VALUES (${installation}, ${epochAt(nowMs)})`);
  return decision;
}

export function* pauseWrites(installation: string, forMs: number, atMs?: number): Program<void> {
  yield* count(
    sql`INSERT INTO write_budgets (installation, paused_until) VALUES (${installation}, ${instant(atMs, forMs)})
        ON CONFLICT (installation) DO UPDATE SET paused_until = excluded.paused_until WHERE excluded.paused_until > write_budgets.paused_until`,
  );
}

export function* trimWrites(keepMs: number, atMs?: number): Program<number> {
  return yield* count(sql`DELETE FROM write_events WHERE at < ${instant(atMs, -keepMs)}`);
}
