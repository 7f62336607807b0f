import type { GoalKey, Ledger } from '../../ports/ledger.js';
import type { Octokit } from '../github-forge.js';
import { readGitHubMeta, type GitHubGoal } from '../goal-meta.js';

/** Replies to each review whose fix task is now checkpointed; the others stay pending. */
export async function answerReviews(o: Octokit, ledger: Ledger, key: GoalKey, g: GitHubGoal, checkpoints: Array<{ task_id: string; sha: string }>): Promise<void> {
  const goal = await ledger.getGoal(key);
  const pending = (goal && readGitHubMeta(goal.meta).pendingReviews) ?? [];
  if (pending.length === 0) return;
  const done = new Map(checkpoints.map((c) => [c.task_id, c.sha]));
  const left: typeof pending = [];
  for (const p of pending) {
    const sha = done.get(p.taskId);
    if (!sha) {
      left.push(p);
      continue;
    }
    await o.rest.issues.createComment({
      owner: g.owner,
      repo: g.repo,
      issue_number: p.prNumber,
      body: `Addressed review ${g.htmlUrl}/pull/${p.prNumber}#pullrequestreview-${p.reviewId} in ${sha.slice(0, 7)} (task \`${p.taskId}\`, verified).`,
    });
  }
  await ledger.setMeta(key, { pendingReviews: left });
}
