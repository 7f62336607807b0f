import type { Octokit, WriterIdentity } from '../github/github-forge.js';
import { isOwnComment } from '../github/own-comments.js';
import { findCommand } from '../steering/commands.js';
import type { EventBase, EventOf, IssueRef } from '../steering/events.js';
import type { IssueComment } from './rebuild.js';

/**
 * `/goal` commands a run must apply before its own event. A workflow's concurrency group keeps one
 * waiting run: a newer event cancels the one waiting, so a command's own run may never start. Each
 * run therefore applies, oldest first, every command on the goal's issue and pull request newer
 * than the last one the goal's record says was applied (`lastCommandId`), its own included.
 */
export interface CommandSource {
  comments: readonly IssueComment[];
  issueNumber: number;
  isPullRequest: boolean;
}

/** Comment ids are increasing on GitHub: newer comments have larger ids. */
export function missedCommandEvents(sources: readonly CommandSource[], after: number, self: WriterIdentity, base: Omit<EventBase, 'sender' | 'deliveryId'>, issue: IssueRef): EventOf<'command'>[] {
  const out: EventOf<'command'>[] = [];
  for (const source of sources) {
    for (const c of source.comments) {
      if (c.id <= after || !c.user?.login) continue;
      // Never its own words (a personal access token's user writes the escalation, which quotes output), nor a bot's.
      if (isOwnComment(c, self) || c.user.type === 'Bot' || c.user.login.endsWith('[bot]')) continue;
      const command = findCommand(c.body ?? '');
      if (!command) continue;
      out.push({
        ...base,
        deliveryId: `comment-${c.id}`,
        sender: c.user.login,
        type: 'command',
        issue: source.isPullRequest ? { number: source.issueNumber, title: '', body: null, user: null } : issue,
        isPullRequest: source.isPullRequest,
        commentId: c.id,
        command,
      });
    }
  }
  return out.sort((a, b) => a.commentId - b.commentId);
}

/** The newest `/goal` command among the comments (0: none): where the goal's record starts counting. */
export function newestCommandId(sources: readonly CommandSource[]): number {
  let newest = 0;
  for (const s of sources) for (const c of s.comments) if (c.id > newest && findCommand(c.body ?? '')) newest = c.id;
  return newest;
}

/** The comments of the goal's pull request, when it has one. */
export async function pullRequestComments(o: Octokit, owner: string, repo: string, prNumber: number | undefined): Promise<IssueComment[]> {
  if (prNumber === undefined) return [];
  return o.paginate(o.rest.issues.listComments, { owner, repo, issue_number: prNumber, per_page: 100 });
}
