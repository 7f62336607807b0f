import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { WritePriority } from '../ports/write-budget.js';
import type { GitHubGoal, GitHubGoalMeta } from '../steering/goal-meta.js';
import { STATUS_MARKER } from '../steering/report/status-comment.js';
import { createOnce } from './create-once.js';
import type { Octokit } from './github-forge.js';
import { findCommentByMarker, type WriterIdentity } from './own-comments.js';
import { createOptions, writeOptions } from './write-options.js';

export interface UpsertHow {
  priority?: WritePriority;
  maxWaitMs?: number;
  /** The queue report's write: the place in the queue it shows stays recorded. */
  keepQueueShown?: boolean;
}

export interface UpsertContext {
  o: Octokit;
  g: GitHubGoal;
  key: GoalKey;
  ledger: Pick<GoalLedger, 'setMeta'>;
  self: () => Promise<WriterIdentity>;
}

/**
 * Edits the status comment (or posts it). Any write but the queue report's shows the goal's own
 * state, so the place in the queue it showed is forgotten (meta `queueShown`). `bodyUnknown`: this
 * process does not know what the comment shows, so GitHub is asked (a read) before it is edited.
 */
export async function upsertStatusComment(c: UpsertContext, body: string, meta: GitHubGoalMeta, bodyUnknown: boolean, how: UpsertHow = {}): Promise<void> {
  const { owner, repo, issueNumber } = c.g;
  const forgetQueue = meta.queueShown !== undefined && !how.keepQueueShown ? { queueShown: null } : {};
  let id = meta.statusCommentId;
  id ??= await findCommentByMarker(c.o, c.g, STATUS_MARKER, await c.self());
  if (id) {
    try {
      const unchanged = bodyUnknown && (await c.o.rest.issues.getComment({ owner, repo, comment_id: id })).data.body === body;
      if (!unchanged) await c.o.rest.issues.updateComment({ owner, repo, comment_id: id, body, ...writeOptions(how.priority ?? 'background', how.maxWaitMs) });
      if (meta.statusCommentId !== id || 'queueShown' in forgetQueue) await c.ledger.setMeta(c.key, { statusCommentId: id, ...forgetQueue });
      return;
    } catch (err) {
      if ((err as { status?: number }).status !== 404) throw err; // deleted by someone: post a new one
    }
  }
  const created = await createOnce({
    find: async () => findCommentByMarker(c.o, c.g, STATUS_MARKER, await c.self()),
    create: async () => (await c.o.rest.issues.createComment({ owner, repo, issue_number: issueNumber, body, ...createOptions('normal', how.maxWaitMs) })).data.id,
  });
  await c.ledger.setMeta(c.key, { statusCommentId: created, ...forgetQueue });
}
