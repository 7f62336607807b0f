import type { GoalCommand } from './commands.js';

/** What a webhook handler hands over: parsed, not yet authorized, not yet acted on. */
export interface EventBase {
  deliveryId: string;
  installationId: number;
  owner: string;
  repo: string;
  /** The user who caused the event. */
  sender: string;
  repository: {
    name: string;
    owner: { login: string };
    clone_url: string;
    html_url: string;
    default_branch: string;
  };
}

export interface IssueRef {
  number: number;
  title: string;
  body: string | null;
  user: { login: string } | null;
  assignees?: Array<{ login: string } | null> | null;
  labels?: Array<{ name?: string } | string>;
}

export type GoalEvent =
  | (EventBase & { type: 'labeled'; label: string; issue: IssueRef })
  | (EventBase & { type: 'unlabeled'; label: string; issue: IssueRef })
  | (EventBase & { type: 'issue_closed'; issue: IssueRef })
  | (EventBase & {
      type: 'command';
      /** The issue the comment is on (a PR is an issue too). */
      issue: IssueRef;
      isPullRequest: boolean;
      commentId: number;
      command: { ok: true; command: GoalCommand } | { ok: false; error: string };
    })
  | (EventBase & { type: 'pr_closed'; prNumber: number; merged: boolean; headRef: string })
  | (EventBase & {
      type: 'review';
      prNumber: number;
      headRef: string;
      reviewId: number;
      state: string;
      body: string | null;
    });

/** The events of one or more kinds. */
export type EventOf<T extends GoalEvent['type']> = Extract<GoalEvent, { type: T }>;
