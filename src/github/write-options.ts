import type { WritePriority } from '../ports/write-budget.js';

/** A write's Octokit request options: its priority, read by the write budget's hook (write-budget-plugin.ts) as `options.request.writePriority`. */
export function writeOptions(priority: WritePriority): { request: { writePriority: WritePriority } } {
  return { request: { writePriority: priority } };
}

/**
 * A create's request options: as `writeOptions`, and never re-sent by Octokit's retry plugin
 * (`retries: 0`): GitHub may have performed a POST it answered with a 5xx, so the object is
 * looked for before it is sent again (create-once.ts).
 */
export function createOptions(priority: WritePriority): { request: { writePriority: WritePriority; retries: 0 } } {
  return { request: { writePriority: priority, retries: 0 } };
}
