import type { GoalSpec } from '../../goal/schema.js';
import type { GoalState } from '../../goal/states.js';
import type { AttemptEntry, AttemptLogEntry, AttemptLogFilter } from '../../ports/attempt-log.js';
import type { AttemptRecord, ControlRequest, CounterDelta, Counters, EventRecord, GoalChange, GoalKey, GoalRecord, TaskPatch, TaskRecord } from '../../ports/goal-ledger.js';
import type { InboxEntry } from '../../ports/inbox.js';
import type { LeaseRecord } from '../../ports/leases.js';
import type { Ledger } from '../../ports/ledger.js';
import type { GivenUpEffect, PendingEffect } from '../../ports/outbox.js';
import type { WriteDecision, WriteRequest } from '../../ports/write-budget.js';
import * as attempts from './attempts.js';
import * as goals from './goals.js';
import * as inbox from './inbox-leases.js';
import * as outbox from './outbox.js';
import { count, type Program, type SqlDriver } from './program.js';
import { epochTime, isoTime, sql } from './statement.js';
import * as writeBudget from './write-budget.js';

/**
 * The ledger over SQL, written once: SQLite and PostgreSQL differ only in their driver (how a
 * program's statements run) and in the dialect its statements render to (sql/statement.ts).
 */
export class SqlLedger implements Ledger {
  constructor(private readonly db: SqlDriver) {}

  async upsertGoal(key: GoalKey, input: { spec: GoalSpec; branch: string; priority?: string }): Promise<GoalRecord> {
    return this.db.transaction(goals.upsertGoal(key, input));
  }

  async getGoal(key: GoalKey): Promise<GoalRecord | undefined> {
    return this.db.run(goals.getGoal(key));
  }

  async listGoals(filter: { exceptStates?: Iterable<GoalState> } = {}): Promise<GoalRecord[]> {
    return this.db.run(goals.listGoals(filter));
  }

  async setState(key: GoalKey, state: GoalState, event: string, detail?: string | null, stopReason?: string | null): Promise<void> {
    await this.recordChange(key, { transitions: [{ to: state, event, detail: detail ?? null, ...(stopReason !== undefined ? { stopReason } : {}) }] });
  }

  async recordChange(key: GoalKey, change: GoalChange): Promise<void> {
    await this.db.transaction(recordStep(key, change));
  }

  async listTasks(key: GoalKey): Promise<TaskRecord[]> {
    return this.db.run(goals.listTasks(key));
  }

  async updateTask(key: GoalKey, taskId: string, patch: TaskPatch): Promise<void> {
    await this.db.run(goals.updateTask(key, taskId, patch));
  }

  async recordAttempt(key: GoalKey, attempt: AttemptRecord): Promise<void> {
    await this.db.run(attempts.recordAttempt(key, attempt));
  }

  async listAttempts(key: GoalKey, taskId?: string): Promise<AttemptRecord[]> {
    return this.db.run(attempts.listAttempts(key, taskId));
  }

  async appendAttemptEntry(key: GoalKey, taskId: string, attempt: number, entry: AttemptEntry): Promise<void> {
    await this.db.run(attempts.appendAttemptEntry(key, taskId, attempt, entry));
  }

  async listAttemptEntries(key: GoalKey, filter: AttemptLogFilter = {}): Promise<AttemptLogEntry[]> {
    return this.db.run(attempts.listAttemptEntries(key, filter));
  }

  async listEvents(key: GoalKey): Promise<EventRecord[]> {
    return this.db.run(goals.listEvents(key));
  }

  async addCounters(key: GoalKey, delta: CounterDelta): Promise<Counters> {
    return this.db.run(goals.addCounters(key, delta));
  }

  async setControl(key: GoalKey, control: ControlRequest | null): Promise<void> {
    await this.db.run(goals.setControl(key, control));
  }

  async setMeta(key: GoalKey, patch: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.db.transaction(goals.mergeMeta(key, patch));
  }

  async updateMeta(key: GoalKey, update: (meta: Record<string, unknown>) => Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.db.transaction(goals.mergeMeta(key, update));
  }

  async pendingEffects(filter: { key?: GoalKey; settledForMs?: number } = {}): Promise<PendingEffect[]> {
    return this.db.run(outbox.pendingEffects(filter));
  }

  async claimEffect(id: number, holder: string, ttlMs: number): Promise<number> {
    return this.db.run(outbox.claimEffect(id, holder, ttlMs));
  }

  async renewEffectClaim(id: number, holder: string, ttlMs: number): Promise<boolean> {
    return this.db.run(outbox.renewEffectClaim(id, holder, ttlMs));
  }

  async completeEffect(id: number): Promise<void> {
    await this.db.run(outbox.completeEffect(id));
  }

  async failEffect(id: number, holder: string, error: string, retryInMs: number): Promise<void> {
    await this.db.run(outbox.failEffect(id, holder, error, retryInMs));
  }

  async giveUpEffect(id: number, holder: string, error: string): Promise<void> {
    await this.db.run(outbox.giveUpEffect(id, holder, error));
  }

  async givenUpEffects(filter: { key?: GoalKey } = {}): Promise<GivenUpEffect[]> {
    return this.db.run(outbox.givenUpEffects(filter));
  }

  async recordDelivery(id: string, event?: unknown): Promise<boolean> {
    return this.db.run(inbox.recordDelivery(id, event));
  }

  async recordDeliveries(entries: readonly { id: string; event?: unknown }[]): Promise<boolean[]> {
    return entries.length === 0 ? [] : this.db.transaction(inbox.recordDeliveries(entries));
  }

  async markDeliveryHandled(id: string): Promise<void> {
    await this.db.run(inbox.markDeliveryHandled(id));
  }

  async unhandledDeliveries(): Promise<InboxEntry[]> {
    return this.db.run(inbox.unhandledDeliveries());
  }

  async acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.db.run(inbox.acquireLease(name, holder, ttlMs));
  }

  async renewLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.db.run(inbox.renewLease(name, holder, ttlMs));
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.db.run(inbox.releaseLease(name, holder));
  }

  async listLeases(): Promise<LeaseRecord[]> {
    return this.db.run(inbox.listLeases());
  }

  async tryTakeWrite(request: WriteRequest): Promise<WriteDecision> {
    return this.db.transaction(writeBudget.tryTakeWrite(request));
  }

  async pauseWrites(installation: string, forMs: number, atMs?: number): Promise<void> {
    await this.db.run(writeBudget.pauseWrites(installation, forMs, atMs));
  }

  async trimWrites(keepMs: number, atMs?: number): Promise<number> {
    return this.db.run(writeBudget.trimWrites(keepMs, atMs));
  }

  async prune(opts: { expiredLeasesMs: number; handledDeliveriesMs: number }): Promise<{ leases: number; deliveries: number; effects: number }> {
    return this.db.run(prune(opts));
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

function* prune(opts: { expiredLeasesMs: number; handledDeliveriesMs: number }): Program<{ leases: number; deliveries: number; effects: number }> {
  const leases = yield* count(sql`DELETE FROM leases WHERE expires_at < ${epochTime(-opts.expiredLeasesMs)}`);
  const deliveries = yield* count(sql`DELETE FROM deliveries WHERE handled_at IS NOT NULL AND received_at < ${isoTime(-opts.handledDeliveriesMs)}`);
  // A given-up effect stays: it is what `status` and the status comment report.
  const effects = yield* count(sql`DELETE FROM effects WHERE done_at IS NOT NULL AND given_up_at IS NULL AND done_at < ${epochTime(-opts.handledDeliveriesMs)}`);
  return { leases, deliveries, effects };
}

/** A step: the goal's change, then what its effects did (attempts, the attempt record), in one transaction. */
function* recordStep(key: GoalKey, change: GoalChange): Program<void> {
  yield* goals.recordChange(key, change);
  for (const a of change.attempts ?? []) yield* attempts.recordAttempt(key, a);
  for (const e of change.attemptEntries ?? []) yield* attempts.appendAttemptEntry(key, e.taskId, e.attempt, e.entry);
}
