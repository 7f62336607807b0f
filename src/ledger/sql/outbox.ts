import type { GoalKey } from '../../ports/goal-ledger.js';
import type { GivenUpEffect, PendingEffect } from '../../ports/outbox.js';
import { type EffectRow, toEffect, toGivenUpEffect } from '../rows.js';
import { trimForLedger } from '../trim.js';
import { count, firstRow, type Program, rows } from './program.js';
import { EPOCH_ZERO, epochTime, join, type Sql, sql, text } from './statement.js';

/** The outbox's rules (ports/outbox.ts), as programs for either store. Its times are `epoch` columns. */

const ofGoal = (key: GoalKey | undefined): Sql[] => (key ? [sql`g.repo = ${key.repo} AND g.goal_id = ${key.goalId}`] : []);

export function* pendingEffects(filter: { key?: GoalKey; settledForMs?: number }): Program<PendingEffect[]> {
  const where = [sql`e.done_at IS NULL`, ...ofGoal(filter.key)];
  // The sweep's view: neither claimed nor recorded within the last `settledForMs`.
  if (filter.settledForMs !== undefined) where.push(sql`e.claimed_until <= ${epochTime()} AND e.created_at <= ${epochTime(-filter.settledForMs)}`);
  const found = yield* rows<EffectRow>(
    sql`SELECT e.id, e.kind, e.payload_json, e.created_at, e.attempts, e.last_error, g.repo, g.goal_id
        FROM effects e JOIN goals g ON g.id = e.goal WHERE ${join(where, ' AND ')} ORDER BY e.id`,
  );
  return found.map(toEffect);
}

/** Counts the try and claims the effect when it is not done and no try holds it; 0 otherwise. */
export function* claimEffect(id: number, holder: string, ttlMs: number): Program<number> {
  const row = yield* firstRow<{ attempts: number }>(
    sql`UPDATE effects SET claimed_by = ${holder}, claimed_until = ${epochTime(ttlMs)}, attempts = attempts + 1
        WHERE id = ${id} AND done_at IS NULL AND claimed_until <= ${epochTime()} RETURNING attempts`,
  );
  return row?.attempts ?? 0;
}

/** Only the holder's claim of an effect not done; an expired claim nobody took since is still the holder's. */
export function* renewEffectClaim(id: number, holder: string, ttlMs: number): Program<boolean> {
  const n = yield* count(sql`UPDATE effects SET claimed_until = ${epochTime(ttlMs)} WHERE id = ${id} AND claimed_by = ${holder} AND done_at IS NULL`);
  return n > 0;
}

export function* completeEffect(id: number): Program<void> {
  yield* count(sql`UPDATE effects SET done_at = ${epochTime()}, claimed_until = ${EPOCH_ZERO} WHERE id = ${id}`);
}

/** A try that no longer holds the effect changes nothing. */
export function* failEffect(id: number, holder: string, error: string, retryInMs: number): Program<void> {
  yield* count(
    sql`UPDATE effects SET last_error = ${text(trimForLedger(error))}, claimed_until = ${epochTime(retryInMs)}
        WHERE id = ${id} AND claimed_by = ${holder} AND done_at IS NULL`,
  );
}

/** Done, and kept as given up (prune leaves it); a try that no longer holds the effect changes nothing. */
export function* giveUpEffect(id: number, holder: string, error: string): Program<void> {
  yield* count(
    sql`UPDATE effects SET last_error = ${text(trimForLedger(error))}, done_at = ${epochTime()}, given_up_at = ${epochTime()}, claimed_until = ${EPOCH_ZERO}
        WHERE id = ${id} AND claimed_by = ${holder} AND done_at IS NULL`,
  );
}

export function* givenUpEffects(filter: { key?: GoalKey }): Program<GivenUpEffect[]> {
  const where = [sql`e.given_up_at IS NOT NULL`, ...ofGoal(filter.key)];
  const found = yield* rows<EffectRow>(
    sql`SELECT e.id, e.kind, e.payload_json, e.created_at, e.attempts, e.last_error, e.given_up_at, g.repo, g.goal_id
        FROM effects e JOIN goals g ON g.id = e.goal WHERE ${join(where, ' AND ')} ORDER BY e.id`,
  );
  return found.map(toGivenUpEffect);
}
