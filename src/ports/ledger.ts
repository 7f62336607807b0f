import type { AttemptLog } from './attempt-log.js';
import type { GoalLedger } from './goal-ledger.js';
import type { Inbox } from './inbox.js';
import type { Leases } from './leases.js';
import type { Outbox } from './outbox.js';
import type { WriteBudgetStore } from './write-budget.js';

// The ledger's concerns live in their own ports; these names stay importable from here.
export type { AttemptRecord, ControlRequest, CounterDelta, Counters, EventRecord, GoalChange, GoalKey, GoalLedger, GoalRecord, TaskPatch, TaskRecord } from './goal-ledger.js';
export type { Inbox, InboxEntry } from './inbox.js';
export type { LeaseRecord, Leases } from './leases.js';
export type { EffectInput, GivenUpEffect, Outbox, PendingEffect } from './outbox.js';
export type { WriteBudgetStore } from './write-budget.js';

/** Housekeeping over the ledger's concerns: what a long-running process (the worker pool) drops now and then. */
export interface LedgerHousekeeping {
  /**
   * Drops leases expired for longer than `expiredLeasesMs`, done effects and handled inbox
   * entries received longer than `handledDeliveriesMs` ago (a redelivery of one of those is then
   * handled again, so keep that longer than GitHub's redelivery window). Returns the rows dropped.
   */
  prune(opts: { expiredLeasesMs: number; handledDeliveriesMs: number }): Promise<{ leases: number; deliveries: number; effects: number }>;
}

/**
 * The durable store, one database: the goals (GoalLedger), what each attempt did (AttemptLog), the effects their changes imply
 * (Outbox), the webhook inbox (Inbox), the leases (Leases) and the GitHub write budget (WriteBudgetStore), plus housekeeping over them. Only the code that opens and
 * closes the store holds all of it; a consumer takes the narrow port(s) it uses.
 */
export interface Ledger extends GoalLedger, AttemptLog, Outbox, Inbox, Leases, WriteBudgetStore, LedgerHousekeeping {
  close(): Promise<void>;
}

/** The ledger cannot be opened (a bad path, not a database, a newer schema): bad input, not a crash. */
export class LedgerOpenError extends Error {
  override name = 'LedgerOpenError';
  constructor(
    readonly location: string,
    readonly reason: string,
  ) {
    super(`cannot open the ledger ${location}: ${reason}`);
  }
}
