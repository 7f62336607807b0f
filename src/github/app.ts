import type { ApplicationFunction } from 'probot';
import type { AcceptEvent } from './handlers/base.js';
import { onCheckRun } from './handlers/check-run.js';
import { onInstallation } from './handlers/installation.js';
import { onIssueComment } from './handlers/issue-comment.js';
import { onIssues } from './handlers/issues.js';
import { onPullRequestClosed } from './handlers/pull-request.js';
import { onPullRequestReview } from './handlers/pull-request-review.js';
import { onPush } from './handlers/push.js';
import { onStatus } from './handlers/status.js';

/**
 * The GitHub App: which webhook event goes to which handler. Each handler only turns the payload
 * into a GoalEvent and hands it to `intake` (the inbox, see intake.ts); the parts are composed in
 * runtime.ts.
 */
export function goalLoopApp(intake: AcceptEvent): ApplicationFunction {
  return (app) => {
    app.on(['issues.labeled', 'issues.unlabeled', 'issues.closed'], onIssues(intake));
    app.on('issue_comment.created', onIssueComment(intake));
    app.on('pull_request.closed', onPullRequestClosed(intake));
    app.on('pull_request_review.submitted', onPullRequestReview(intake));
    app.on('push', onPush(intake));
    app.on('check_run.completed', onCheckRun(intake));
    app.on('status', onStatus(intake));
    app.on('installation', onInstallation());
  };
}
