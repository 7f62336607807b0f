import type { GoalKey } from '../ports/goal-ledger.js';

/**
 * What the issues of waiting goals should show of the queue, decided purely from what the queue
 * report gathered (queue-reporter.ts acts on it). Goals that wait for a worker say so on their
 * issue at once; their positions are refreshed from a small allowance of writes, the most
 * misleading first, so a long queue never spends the budget running goals need.
 */

/** What an issue's status comment shows of its goal's place in the queue (meta `queueShown`). */
export interface QueueShown {
  position: number;
  /** When it was shown (ISO 8601). */
  at: string;
}

export interface QueuedGoalFact {
  key: GoalKey;
  /** 1 = the next goal a free worker takes (claim order, among the goals waiting for a run). */
  position: number;
  /** How long it has waited so far. */
  waitedMs: number;
  /** What its status comment shows now, when it shows the queue. */
  shown: QueueShown | undefined;
}

export interface StaleGoalFact {
  key: GoalKey;
  shown: QueueShown;
  /** Consecutive reports that found the goal neither queued nor run (a claimed job is neither for a moment). */
  missedReports: number;
}

export interface QueueReportFacts {
  /** The goals waiting for a run (no worker holds them), in claim order. */
  queued: readonly QueuedGoalFact[];
  /** Goals whose comment still says "queued" but that no longer wait, and no run holds. */
  stale: readonly StaleGoalFact[];
  /** Position refreshes this report may send (the reporter's allowance of background writes). */
  refreshAllowance: number;
}

export type QueueReportAction =
  /** Says on the issue that the goal waits (normal priority: the person who labelled it is looking). */
  | { type: 'showQueued'; key: GoalKey; position: number; priority: 'normal' }
  /** A newer position (background: it coalesces, only staleness is lost by holding it back). */
  | { type: 'refreshPosition'; key: GoalKey; position: number; priority: 'background' }
  /** The goal no longer waits and nothing showed its state since: the comment shows its state again. */
  | { type: 'showState'; key: GoalKey };

export interface QueueReportPolicy {
  /** A goal that a worker takes within this long never shows "queued" (a write saved). */
  minWaitMs: number;
  /** Reports a goal must be missed in before its comment is put back (see StaleGoalFact). */
  staleAfterReports: number;
}

export const DEFAULT_QUEUE_REPORT_POLICY: QueueReportPolicy = { minWaitMs: 2000, staleAfterReports: 2 };

/** How misleading a shown position is: the share of the shown wait that has gone (0 = exact). */
const staleness = (shown: number, now: number): number => Math.abs(shown - now) / shown;

export function decideQueueReport(facts: QueueReportFacts, policy: QueueReportPolicy = DEFAULT_QUEUE_REPORT_POLICY): QueueReportAction[] {
  const actions: QueueReportAction[] = [];
  for (const g of facts.queued) {
    if (!g.shown && g.waitedMs >= policy.minWaitMs) actions.push({ type: 'showQueued', key: g.key, position: g.position, priority: 'normal' });
  }
  const moved = facts.queued
    .filter((g) => g.shown !== undefined && g.shown.position !== g.position)
    .sort((a, b) => staleness(b.shown!.position, b.position) - staleness(a.shown!.position, a.position) || a.position - b.position);
  for (const g of moved.slice(0, Math.max(0, facts.refreshAllowance))) actions.push({ type: 'refreshPosition', key: g.key, position: g.position, priority: 'background' });
  for (const g of facts.stale) if (g.missedReports >= policy.staleAfterReports) actions.push({ type: 'showState', key: g.key });
  return actions;
}
