import type { Context } from 'probot';
import type { AcceptEvent } from './base.js';
import { issueCommentEvent } from './payload-events.js';

/** issue_comment.created: a `/goal` command on an issue or a goal PR. Edits and deletions are ignored. */
export function onIssueComment(intake: AcceptEvent) {
  return async (context: Context<'issue_comment.created'>): Promise<void> => {
    const event = issueCommentEvent(context.id, context.payload);
    if (event) return intake(event);
  };
}
