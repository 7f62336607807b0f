import type { WritePriority } from '../ports/write-budget.js';

/** What the write budget's hook (write-budget-plugin.ts) reads of a write's request options. */
export interface WriteRequestOptions {
  writePriority: WritePriority;
  /** The most this write may wait for the budget; past it the write is not sent (WriteBudgetTimeoutError). */
  writeMaxWaitMs?: number;
}

/** A write's Octokit request options: its priority and, optionally, how long it may wait for the budget. */
export function writeOptions(priority: WritePriority, maxWaitMs?: number): { request: WriteRequestOptions } {
  return { request: { writePriority: priority, ...(maxWaitMs !== undefined ? { writeMaxWaitMs: maxWaitMs } : {}) } };
}

/**
 * A create's request options: as `writeOptions`, and never re-sent by Octokit's retry plugin
 * (`retries: 0`): GitHub may have performed a POST it answered with a 5xx, so the object is
 * looked for before it is sent again (create-once.ts).
 */
export function createOptions(priority: WritePriority, maxWaitMs?: number): { request: WriteRequestOptions & { retries: 0 } } {
  return { request: { ...writeOptions(priority, maxWaitMs).request, retries: 0 } };
}
