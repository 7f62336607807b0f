import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { WritePriority } from '../ports/write-budget.js';
import type { GitHubGoal, GitHubGoalMeta } from '../steering/goal-meta.js';
import { takePendingReviews } from '../steering/pending-reviews.js';

export interface ReviewRepliesContext {
  g: GitHubGoal;
  key: GoalKey;
  ledger: Parameters<typeof takePendingReviews>[0] & Pick<GoalLedger, 'getGoal'>;
  meta: () => Promise<GitHubGoalMeta>;
  comment: (issueNumber: number, body: string, once: { marker: string; retry: boolean }, priority: WritePriority) => Promise<void>;
}

/**
 * Replies to each review whose fix task one of these checkpoints verified, once: two effects may
 * answer one review (its checkpoint's, and a run's end), so the reply's marker is always looked for.
 */
export async function answerReviews(c: ReviewRepliesContext, checkpoints: ReadonlyArray<{ task_id: string; sha: string }>): Promise<void> {
  const pending = (await c.meta()).pendingReviews ?? [];
  const done = new Map(checkpoints.map((cp) => [cp.task_id, cp.sha]));
  const answered = pending.filter((p) => done.has(p.taskId));
  if (answered.length === 0) return;
  for (const p of answered) {
    await c.comment(
      p.prNumber,
      `Addressed review ${c.g.htmlUrl}/pull/${p.prNumber}#pullrequestreview-${p.reviewId} in ${done.get(p.taskId)!.slice(0, 7)} (task \`${p.taskId}\`, verified).`,
      { marker: `<!-- goal-loop:review-reply ${p.reviewId} -->`, retry: true },
      'urgent',
    );
  }
  // Atomic: a review that arrived meanwhile stays pending.
  await takePendingReviews(
    c.ledger,
    c.key,
    answered.map((a) => a.reviewId),
  );
}
