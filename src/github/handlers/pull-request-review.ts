import type { Context } from 'probot';
import type { AcceptEvent } from './base.js';
import { pullRequestReviewEvent } from './payload-events.js';

/** pull_request_review.submitted on a goal PR: changes requested (or line comments) become a task. */
export function onPullRequestReview(intake: AcceptEvent) {
  return async (context: Context<'pull_request_review.submitted'>): Promise<void> => {
    const event = pullRequestReviewEvent(context.id, context.payload);
    if (event) return intake(event);
  };
}
