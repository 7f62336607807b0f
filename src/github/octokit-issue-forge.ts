import type { RepoConfig } from '../config/repo-config.js';
import type { EventBase } from '../steering/events.js';
import type { IssueForge, IssueForgeFor, Reaction, ReviewComment } from '../steering/issue-forge.js';
import { canSteer } from './authorize.js';
import type { Octokit } from './github-forge.js';
import { loadRepoConfig } from './repo-config-loader.js';
import { createOptions, writeOptions } from './write-options.js';

/** The steering policy's forge (steering/issue-forge.ts) on GitHub, through an installation's Octokit, for one repository. */
export class OctokitIssueForge implements IssueForge {
  constructor(
    private readonly o: Octokit,
    private readonly owner: string,
    private readonly repo: string,
    /** Where the owner's config is on the default branch (an Action's `config` input); default `.github/goal-loop.yml`. */
    private readonly configPath?: string,
  ) {}

  maySteer(login: string): Promise<boolean> {
    return canSteer(this.o, this.owner, this.repo, login);
  }

  loadConfig(): Promise<RepoConfig> {
    return loadRepoConfig(this.o, this.owner, this.repo, this.configPath);
  }

  async readIssue(issueNumber: number): Promise<{ title: string; body: string }> {
    const { data } = await this.o.rest.issues.get({ owner: this.owner, repo: this.repo, issue_number: issueNumber });
    return { title: data.title, body: data.body ?? '' };
  }

  async isOwnPullMerged(prNumber: number, branch: string | undefined): Promise<boolean> {
    const { data: pr } = await this.o.rest.pulls.get({ owner: this.owner, repo: this.repo, pull_number: prNumber });
    const inRepo = pr.head.repo !== null && pr.head.repo.id === pr.base.repo.id;
    return Boolean(pr.merged) && inRepo && pr.head.ref === branch;
  }

  async reviewComments(prNumber: number, reviewId: number): Promise<ReviewComment[]> {
    const comments = await this.o.paginate(this.o.rest.pulls.listCommentsForReview, { owner: this.owner, repo: this.repo, pull_number: prNumber, review_id: reviewId, per_page: 100 });
    return comments.map((c) => ({ path: c.path, line: c.line ?? null, body: c.body }));
  }

  /**
   * A reply to a person (a refusal, a command's answer): normal priority, since anyone may make
   * the App answer a refusal; never re-sent by Octokit (a 5xx may come after GitHub posted it).
   */
  async comment(issueNumber: number, body: string): Promise<void> {
    await this.o.rest.issues.createComment({ owner: this.owner, repo: this.repo, issue_number: issueNumber, body, ...createOptions('normal') });
  }

  /** A reaction is the same object when sent twice, so Octokit's retries may resend it. */
  async react(commentId: number, content: Reaction): Promise<void> {
    await this.o.rest.reactions.createForIssueComment({ owner: this.owner, repo: this.repo, comment_id: commentId, content, ...writeOptions('normal') });
  }
}

/** The App's way to an event's forge: its installation's Octokit, bound to the event's repository. */
export function octokitIssueForgeFor(auth: (installationId: number) => Promise<Octokit>): IssueForgeFor {
  return async (e: EventBase) => new OctokitIssueForge(await auth(e.installationId), e.owner, e.repo);
}
