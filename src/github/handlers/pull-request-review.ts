import type { Context } from 'probot';
import { type AcceptEvent, eventBase, fromBot, pullRef } from './base.js';

/** pull_request_review.submitted on a goal PR: changes requested (or line comments) become a task. */
export function onPullRequestReview(intake: AcceptEvent) {
  return async (context: Context<'pull_request_review.submitted'>): Promise<void> => {
    if (fromBot(context)) return;
    const { review, pull_request: pr } = context.payload;
    if (!pr.head.ref.startsWith('goal/')) return;
    if (review.state !== 'changes_requested' && review.state !== 'commented') return;
    const base = eventBase(context);
    const ref = pullRef(context);
    if (!base || !ref) return;
    return intake({ ...base, ...ref, type: 'review', reviewId: review.id, state: review.state, body: review.body });
  };
}
