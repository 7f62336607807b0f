import type { Context } from 'probot';
import { eventBase, type Intake } from './base.js';

/** pull_request.closed on a goal branch: merged -> done, closed unmerged -> stopped. */
export function onPullRequestClosed(intake: Intake) {
  return async (context: Context<'pull_request.closed'>): Promise<void> => {
    const pr = context.payload.pull_request;
    if (!pr.head.ref.startsWith('goal/')) return;
    const base = eventBase(context);
    if (!base) return;
    return intake({ ...base, type: 'pr_closed', prNumber: pr.number, merged: Boolean(pr.merged), headRef: pr.head.ref });
  };
}
