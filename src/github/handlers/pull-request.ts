import type { Context } from 'probot';
import type { AcceptEvent } from './base.js';
import { pullRequestEvent } from './payload-events.js';

/** pull_request.closed on a goal branch (see payload-events.ts). */
export function onPullRequestClosed(intake: AcceptEvent) {
  return async (context: Context<'pull_request.closed'>): Promise<void> => {
    const event = pullRequestEvent(context.id, context.payload);
    if (event) return intake(event);
  };
}
