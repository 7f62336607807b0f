import type { Context } from 'probot';
import { findCommand } from '../../steering/commands.js';
import type { GoalEvent } from '../../steering/events.js';
import type { RepoCheck } from '../../steering/repo-checks.js';
import { eventBase, fromBot, pullRef } from './base.js';

type Payload<E extends 'issues' | 'issue_comment' | 'pull_request' | 'pull_request_review' | 'push' | 'check_run' | 'status'> = E extends 'push'
  ? Context<'push'>['payload']
  : E extends 'check_run'
    ? Context<'check_run.completed'>['payload']
    : E extends 'status'
      ? Context<'status'>['payload']
      : E extends 'issues'
        ? Context<'issues.labeled' | 'issues.unlabeled' | 'issues.closed'>['payload']
        : E extends 'issue_comment'
          ? Context<'issue_comment.created'>['payload']
          : E extends 'pull_request'
            ? Context<'pull_request.closed'>['payload']
            : Context<'pull_request_review.submitted'>['payload'];

/**
 * Webhook payloads -> steering events: what the App's handlers and a GitHub Action's run both
 * hand to the policy. Undefined: the event is none of goal-loop's (a bot's, another label's
 * action, a comment without a command, a pull request off the goal branches). Not yet authorized.
 * `installationId`: for payloads without one (an Action's).
 */

/** issues.labeled / unlabeled / closed. */
export function issuesEvent(deliveryId: string, payload: Payload<'issues'>, installationId?: number): GoalEvent | undefined {
  if (fromBot(payload)) return undefined;
  const base = eventBase(deliveryId, payload, installationId);
  if (!base) return undefined;
  const issue = payload.issue;
  if (payload.action === 'closed') return { ...base, type: 'issue_closed', issue };
  // An Action's run gets every activity type its workflow asked for: only these two are goal-loop's.
  if ((payload.action as string) !== 'labeled' && (payload.action as string) !== 'unlabeled') return undefined;
  const label = 'label' in payload ? payload.label?.name : undefined;
  if (!label) return undefined;
  return { ...base, type: payload.action, label, issue };
}

/** issue_comment.created with a `/goal` command, on an issue or a goal PR. Edits and deletions are not commands. */
export function issueCommentEvent(deliveryId: string, payload: Payload<'issue_comment'>, installationId?: number): GoalEvent | undefined {
  if ((payload.action as string) !== 'created' || fromBot(payload)) return undefined;
  const command = findCommand(payload.comment.body ?? '');
  if (!command) return undefined;
  const base = eventBase(deliveryId, payload, installationId);
  if (!base) return undefined;
  const { issue, comment } = payload;
  return { ...base, type: 'command', issue, isPullRequest: Boolean(issue.pull_request), commentId: comment.id, command };
}

/**
 * pull_request.closed on a goal branch: merged -> done, closed unmerged -> stopped. Whether it is
 * the goal's own pull request (its recorded number, its head in this repository) is decided later.
 */
export function pullRequestEvent(deliveryId: string, payload: Payload<'pull_request'>, installationId?: number): GoalEvent | undefined {
  if ((payload.action as string) !== 'closed') return undefined;
  const pr = payload.pull_request;
  if (!pr.head.ref.startsWith('goal/')) return undefined;
  const base = eventBase(deliveryId, payload, installationId);
  const ref = pullRef(payload);
  if (!base || !ref) return undefined;
  return { ...base, ...ref, type: 'pr_closed', merged: Boolean(pr.merged) };
}

/** pull_request_review.submitted on a goal PR: changes requested (or line comments) become a task. */
export function pullRequestReviewEvent(deliveryId: string, payload: Payload<'pull_request_review'>, installationId?: number): GoalEvent | undefined {
  if ((payload.action as string) !== 'submitted' || fromBot(payload)) return undefined;
  const { review, pull_request: pr } = payload;
  if (!pr.head.ref.startsWith('goal/')) return undefined;
  if (review.state !== 'changes_requested' && review.state !== 'commented') return undefined;
  const base = eventBase(deliveryId, payload, installationId);
  const ref = pullRef(payload);
  if (!base || !ref) return undefined;
  return { ...base, ...ref, type: 'review', reviewId: review.id, state: review.state, body: review.body };
}

/** Any of the above by event name (`issues`, `issue_comment`, `pull_request`, `pull_request_review`). */
export function goalEventFromPayload(name: string, deliveryId: string, payload: unknown, installationId?: number): GoalEvent | undefined {
  switch (name) {
    case 'issues':
      return issuesEvent(deliveryId, payload as Payload<'issues'>, installationId);
    case 'issue_comment':
      return issueCommentEvent(deliveryId, payload as Payload<'issue_comment'>, installationId);
    case 'pull_request':
      return pullRequestEvent(deliveryId, payload as Payload<'pull_request'>, installationId);
    case 'pull_request_review':
      return pullRequestReviewEvent(deliveryId, payload as Payload<'pull_request_review'>, installationId);
    default:
      return undefined;
  }
}

/**
 * push to the default branch (the base every goal branch leaves from): the goals with an open PR
 * follow it. A bot's push counts (a merge queue's, a release bot's): main moved all the same.
 */
export function pushEvent(deliveryId: string, payload: Payload<'push'>, installationId?: number): GoalEvent | undefined {
  const branch = payload.repository.default_branch;
  if (!branch || payload.ref !== `refs/heads/${branch}` || payload.deleted || !/^[0-9a-f]{40,64}$/.test(payload.after)) return undefined;
  const base = eventBase(deliveryId, payload, installationId);
  if (!base) return undefined;
  return { ...base, type: 'base_pushed', branch, after: payload.after };
}

const SHA = /^[0-9a-f]{40,64}$/;

/**
 * check_run.completed of a goal branch's commit, from a push to this repository: another app's CI
 * (ours is told apart later, by its app id). The sender is that app's bot: a check is not a
 * command, so bots count here.
 */
export function checkRunEvent(deliveryId: string, payload: Payload<'check_run'>, installationId?: number): GoalEvent | undefined {
  const run = payload.check_run;
  if ((payload.action as string) !== 'completed' || run.status !== 'completed' || !SHA.test(run.head_sha)) return undefined;
  // A fork's pull request at the same commit: its suite has no head branch (its checks are the fork's).
  if (!run.check_suite?.head_branch) return undefined;
  const branches = [run.check_suite?.head_branch, ...(run.pull_requests ?? []).map((p) => p.head.ref)].filter((b): b is string => typeof b === 'string' && b.startsWith('goal/'));
  if (branches.length === 0) return undefined;
  const base = eventBase(deliveryId, payload, installationId);
  if (!base) return undefined;
  const check: RepoCheck = {
    source: 'check_run',
    name: run.name,
    id: run.id,
    appId: run.app?.id ?? null,
    appSlug: run.app?.slug ?? null,
    completed: true,
    conclusion: run.conclusion ?? null,
    detailsUrl: run.details_url ?? null,
    output: { title: run.output?.title ?? null, summary: run.output?.summary ?? null, text: run.output?.text ?? null },
  };
  return { ...base, type: 'head_checked', sha: run.head_sha, branches: [...new Set(branches)], check };
}

/** status (a commit status) on a goal branch's commit, once it is no longer pending. */
export function statusEvent(deliveryId: string, payload: Payload<'status'>, installationId?: number): GoalEvent | undefined {
  if (payload.state === 'pending' || !SHA.test(payload.sha)) return undefined;
  const branches = payload.branches.map((b) => b.name).filter((b) => b.startsWith('goal/'));
  if (branches.length === 0) return undefined;
  const base = eventBase(deliveryId, payload, installationId);
  if (!base) return undefined;
  const check: RepoCheck = {
    source: 'status',
    name: payload.context,
    id: payload.id,
    appId: null,
    appSlug: null,
    completed: true,
    conclusion: payload.state,
    detailsUrl: payload.target_url ?? null,
    output: payload.description ? { title: payload.description, summary: null, text: null } : null,
  };
  return { ...base, type: 'head_checked', sha: payload.sha, branches, check };
}
