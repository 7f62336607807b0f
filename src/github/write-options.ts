/**
 * How much a write matters when the installation's write budget is tight: escalations, approval
 * requests and review replies first, then pull requests, check runs, labels and new comments,
 * then status-comment edits (which coalesce: only the latest is worth sending).
 */
export type WritePriority = 'urgent' | 'normal' | 'background';

/** A write's Octokit request options: its priority, read by the write budget's hook as `options.request.priority`. */
export function writeOptions(priority: WritePriority): { request: { priority: WritePriority } } {
  return { request: { priority } };
}

/**
 * A create's request options: as `writeOptions`, and never re-sent by Octokit's retry plugin
 * (`retries: 0`): GitHub may have performed a POST it answered with a 5xx, so the object is
 * looked for before it is sent again (create-once.ts).
 */
export function createOptions(priority: WritePriority): { request: { priority: WritePriority; retries: 0 } } {
  return { request: { priority, retries: 0 } };
}
