import type { GoalKey, GoalLedger } from '../ports/ledger.js';
import { type GitHubGoalMeta, readGitHubMeta } from './goal-meta.js';

export type PendingReview = NonNullable<GitHubGoalMeta['pendingReviews']>[number];

/*
 * The review hand-off between the webhook side (a review becomes a task: `addPendingReview`) and
 * the run that answers it once the task is checkpointed (`takePendingReviews`). They run at once,
 * on different processes: each is one atomic read-and-write of the goal's meta (`updateMeta`), so
 * a review that arrives while a run takes the answered ones is never lost.
 */

const pendingIn = (meta: Record<string, unknown>): PendingReview[] => readGitHubMeta(meta).pendingReviews ?? [];

/** Adds a review whose fix task is not checkpointed yet (the same review again replaces its entry). */
export async function addPendingReview(ledger: GoalLedger, key: GoalKey, review: PendingReview): Promise<void> {
  await ledger.updateMeta(key, (meta) => ({ pendingReviews: [...pendingIn(meta).filter((p) => p.reviewId !== review.reviewId), review] }));
}

/** Removes the answered reviews from the pending list. */
export async function takePendingReviews(ledger: GoalLedger, key: GoalKey, reviewIds: readonly number[]): Promise<void> {
  await ledger.updateMeta(key, (meta) => ({ pendingReviews: pendingIn(meta).filter((p) => !reviewIds.includes(p.reviewId)) }));
}
