import type { RepoConfig } from '../config/repo-config.js';
import type { EventBase } from './events.js';
import type { CheckFailureDetail, RepoCheck } from './repo-checks.js';

/** A reaction on a command's comment: seen, done, or not understood. */
export type Reaction = 'eyes' | '+1' | 'confused';

/** One line comment of a review (untrusted words). */
export interface ReviewComment {
  path: string;
  line?: number | null;
  body: string;
}

/**
 * One repository on a forge, as the issue-steered policy sees it: what handle/gather.ts asks and what
 * handle/act.ts does, and nothing else. The GitHub App implements it with Octokit (github/octokit-issue-forge.ts);
 * a GitHub Action (GITHUB_TOKEN) or another forge implements it with its own client and wires the
 * same policy (handle/event-processor.ts). Errors reject: the event is then retried (intake).
 */
export interface IssueForge {
  /** Whether this person may start or steer a goal here (on GitHub: write, maintain or admin). */
  maySteer(login: string): Promise<boolean>;
  /**
   * The owner's config (`.github/goal-loop.yml` on the default branch), validated; defaults when
   * there is none. Throws RepoConfigError when it is invalid.
   */
  loadConfig(): Promise<RepoConfig>;
  /** An issue's title and body (as the forge has it now). */
  readIssue(issueNumber: number): Promise<{ title: string; body: string }>;
  /** The pull request is merged, and is still the goal's: its head is `branch`, in this repository. */
  isOwnPullMerged(prNumber: number, branch: string | undefined): Promise<boolean>;
  /** A review's line comments, every page. */
  reviewComments(prNumber: number, reviewId: number): Promise<ReviewComment[]>;
  /** A new comment on an issue or pull request. */
  comment(issueNumber: number, body: string): Promise<void>;
  /** A reaction on a comment (a command's). */
  react(commentId: number, content: Reaction): Promise<void>;
  /** The id this App's own check runs carry (never counted as the repository's CI); undefined when it has none. */
  ownAppId(): Promise<number | undefined>;
  /** The goal's pull request as the forge has it now, while it is still the goal's (its head is `branch`, in this repository). */
  pullHead(prNumber: number, branch: string): Promise<{ head: string; draft: boolean; open: boolean } | undefined>;
  /** The checks branch protection requires on `branch` (names or contexts); null when it names none. */
  requiredChecks(branch: string): Promise<string[] | null>;
  /** Every check on a commit (the newest of each check run and status), this App's own left out. */
  headChecks(sha: string, ownAppId: number | undefined): Promise<RepoCheck[]>;
  /** What a failing check said beyond its output: annotations, an Actions job's log tail. */
  checkFailure(check: RepoCheck): Promise<CheckFailureDetail>;
  /** A pull request made a draft, or a draft made ready for review (nothing when it is so already). */
  setDraft(prNumber: number, draft: boolean): Promise<void>;
}

/** The forge of the repository an event is about, authenticated as the wiring sees fit. */
export type IssueForgeFor = (event: EventBase) => Promise<IssueForge>;
