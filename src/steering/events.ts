import type { GoalCommand } from './commands.js';
import type { RepoCheck } from './repo-checks.js';

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

/** A repository as a pull request event names it: its id (stable across renames) and `owner/name`. */
export interface RepoRef {
  id: number;
  fullName: string;
}

/**
 * Which pull request an event is about, and where its head lives: `headRepo` is the head's
 * repository (a fork's, for a pull request from a fork; null when the fork is gone), `baseRepo`
 * this repository.
 */
export interface PullRef {
  prNumber: number;
  headRef: string;
  headRepo: RepoRef | null;
  baseRepo: RepoRef;
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
  | (EventBase & PullRef & { type: 'pr_closed'; merged: boolean })
  /** A push to the repository's default branch (the goals' base): `after` is its new tip. */
  | (EventBase & { type: 'base_pushed'; branch: string; after: string })
  /**
   * A check completed on commit `sha`: another app's check run, or a commit status that is not
   * pending. `branches`: the branches whose head the forge said it is on (a goal branch among them
   * makes it the goal's).
   */
  | (EventBase & { type: 'head_checked'; sha: string; branches: string[]; check: RepoCheck })
  | (EventBase &
      PullRef & {
        type: 'review';
        reviewId: number;
        state: string;
        body: string | null;
      });

/** The events of one or more kinds. */
export type EventOf<T extends GoalEvent['type']> = Extract<GoalEvent, { type: T }>;
