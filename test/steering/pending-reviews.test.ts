import { describe, expect, it } from 'vitest';
import { readGitHubMeta } from '../../src/steering/goal-meta.js';
import { addPendingReview, takePendingReviews } from '../../src/steering/pending-reviews.js';
import { tempDir } from '../helpers/temp.js';
import { openTestStore } from '../helpers/test-store.js';

const KEY = { repo: 'octo-org/widgets', goalId: '41' };
const spec = { goal_id: '41', objective: 'x', constraints: [], acceptance_criteria: [], tasks: [] };
const review = (reviewId: number) => ({ taskId: `review-${reviewId}`, prNumber: 9, reviewId });

/**
 * The review hand-off is atomic: the webhook side appends a review while a run takes the answered
 * ones, on the same goal's meta, and neither loses the other's write (both stores).
 */
describe('the review hand-off', () => {
  it('race: concurrent appends and a concurrent take lose nothing', async () => {
    const store = await openTestStore(await tempDir());
    try {
      const { ledger } = store;
      await ledger.upsertGoal(KEY, { spec, branch: 'goal/41-x' });
      await addPendingReview(ledger, KEY, review(1));
      await addPendingReview(ledger, KEY, review(2));
      const ids = Array.from({ length: 12 }, (_, i) => 100 + i);
      // Two reviews arrive (a dozen, to make the window wide) while the run takes the answered review 1.
      await Promise.all([...ids.map((id) => addPendingReview(ledger, KEY, review(id))), takePendingReviews(ledger, KEY, [1])]);
      const pending = readGitHubMeta((await ledger.getGoal(KEY))!.meta).pendingReviews ?? [];
      expect(pending.map((p) => p.reviewId).sort((a, b) => a - b)).toEqual([2, ...ids]);
      // The same review again replaces its entry; a take of what is not there changes nothing.
      await addPendingReview(ledger, KEY, review(2));
      await takePendingReviews(ledger, KEY, [999]);
      expect((readGitHubMeta((await ledger.getGoal(KEY))!.meta).pendingReviews ?? []).filter((p) => p.reviewId === 2)).toHaveLength(1);
    } finally {
      await store.close();
    }
  });
});
