import type { InboxEntry } from '../../ports/inbox.js';
import type { LeaseRecord } from '../../ports/leases.js';
import { type DeliveryRow, timeText, toInboxEntry } from '../rows.js';
import { count, type Program, rows } from './program.js';
import { BYTEWISE, dialectSql, epochTime, isoTime, json, sql } from './statement.js';

/** The webhook inbox (ports/inbox.ts) and the leases (ports/leases.ts), as programs for either store. */

/** False when the id was seen before (a redelivery): nothing is stored then. */
export function* recordDelivery(id: string, event?: unknown): Program<boolean> {
  const stored = yield* count(sql`INSERT INTO deliveries (id, received_at, event_json) VALUES (${id}, ${isoTime()}, ${event === undefined ? null : json(event)}) ON CONFLICT (id) DO NOTHING`);
  return stored === 1;
}

export function* recordDeliveries(entries: readonly { id: string; event?: unknown }[]): Program<boolean[]> {
  const stored: boolean[] = [];
  for (const { id, event } of entries) stored.push(yield* recordDelivery(id, event));
  return stored;
}

export function* markDeliveryHandled(id: string): Program<void> {
  yield* count(sql`UPDATE deliveries SET handled_at = ${isoTime()} WHERE id = ${id} AND handled_at IS NULL`);
}

/** Deliveries received at the same time come in the order they were stored (SQLite) or by id (PostgreSQL has no row order). */
const RECEIVED_TIE = dialectSql('rowid', 'id');

export function* unhandledDeliveries(): Program<InboxEntry[]> {
  const found = yield* rows<DeliveryRow>(sql`SELECT id, event_json, received_at FROM deliveries WHERE event_json IS NOT NULL AND handled_at IS NULL ORDER BY received_at, ${RECEIVED_TIE}`);
  return found.map(toInboxEntry);
}

/**
 * Leases. Each operation is one atomic statement, so processes sharing the store never both hold
 * a lease; their times are `epoch` columns, on the store's clock.
 */
export function* acquireLease(name: string, holder: string, ttlMs: number): Program<boolean> {
  // Racing inserts of a new name serialize on the key; the loser sees a live lease and skips.
  const taken = yield* count(
    sql`INSERT INTO leases (name, holder, acquired_at, heartbeat_at, expires_at) VALUES (${name}, ${holder}, ${epochTime()}, ${epochTime()}, ${epochTime(ttlMs)})
        ON CONFLICT (name) DO UPDATE SET
          acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at ELSE excluded.acquired_at END,
          holder = excluded.holder, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
        WHERE leases.holder = excluded.holder OR leases.expires_at <= ${epochTime()}`,
  );
  return taken === 1;
}

export function* renewLease(name: string, holder: string, ttlMs: number): Program<boolean> {
  // An expired lease nobody took is still ours: no one else can have worked in between.
  const renewed = yield* count(sql`UPDATE leases SET heartbeat_at = ${epochTime()}, expires_at = ${epochTime(ttlMs)} WHERE name = ${name} AND holder = ${holder}`);
  return renewed === 1;
}

export function* releaseLease(name: string, holder: string): Program<void> {
  yield* count(sql`DELETE FROM leases WHERE name = ${name} AND holder = ${holder}`);
}

interface LeaseRow {
  name: string;
  holder: string;
  acquired_at: number | string;
  heartbeat_at: number | string;
  expires_at: number | string;
  live: number | boolean;
}

export function* listLeases(): Program<LeaseRecord[]> {
  const found = yield* rows<LeaseRow>(sql`SELECT *, expires_at > ${epochTime()} AS live FROM leases ORDER BY name ${BYTEWISE}`);
  return found.map((r) => ({
    name: r.name,
    holder: r.holder,
    acquiredAt: timeText(r.acquired_at),
    heartbeatAt: timeText(r.heartbeat_at),
    expiresAt: timeText(r.expires_at),
    live: Boolean(r.live),
  }));
}
