import type { Context } from 'probot';
import { findCommand } from '../../steering/commands.js';
import { type AcceptEvent, eventBase, fromBot } from './base.js';

/** issue_comment.created: a `/goal` command on an issue or a goal PR. Edits and deletions are ignored. */
export function onIssueComment(intake: AcceptEvent) {
  return async (context: Context<'issue_comment.created'>): Promise<void> => {
    if (fromBot(context)) return;
    const command = findCommand(context.payload.comment.body ?? '');
    if (!command) return;
    const base = eventBase(context);
    if (!base) return;
    const { issue, comment } = context.payload;
    return intake({ ...base, type: 'command', issue, isPullRequest: Boolean(issue.pull_request), commentId: comment.id, command });
  };
}
