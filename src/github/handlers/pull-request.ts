import type { Context } from 'probot';
import { type AcceptEvent, eventBase, pullRef } from './base.js';

/**
 * pull_request.closed on a goal branch: merged -> done, closed unmerged -> stopped. Whether it is
 * the goal's own pull request (its recorded number, its head in this repository) is decided later.
 */
export function onPullRequestClosed(intake: AcceptEvent) {
  return async (context: Context<'pull_request.closed'>): Promise<void> => {
    const pr = context.payload.pull_request;
    if (!pr.head.ref.startsWith('goal/')) return;
    const base = eventBase(context);
    const ref = pullRef(context);
    if (!base || !ref) return;
    return intake({ ...base, ...ref, type: 'pr_closed', merged: Boolean(pr.merged) });
  };
}
