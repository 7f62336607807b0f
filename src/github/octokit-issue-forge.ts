import type { RepoConfig } from '../config/repo-config.js';
import type { EventBase } from '../steering/events.js';
import type { IssueForge, IssueForgeFor, Reaction, ReviewComment } from '../steering/issue-forge.js';
import type { CheckFailureDetail, RepoCheck } from '../steering/repo-checks.js';
import { canSteer } from './authorize.js';
import type { Octokit } from './github-forge.js';
import { appIdentity } from './own-comments.js';
import { readCheckFailure, readHeadChecks, readRequiredChecks } from './repo-checks-reader.js';
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
    /** This App's id (asked of GitHub once per process by the wiring); default: asked now. */
    private readonly appId: () => Promise<number | undefined> = async () => (await appIdentity(o)).id,
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

  ownAppId(): Promise<number | undefined> {
    return this.appId();
  }

  async pullHead(prNumber: number, branch: string): Promise<{ head: string; draft: boolean; open: boolean } | undefined> {
    const { data: pr } = await this.o.rest.pulls.get({ owner: this.owner, repo: this.repo, pull_number: prNumber });
    const own = pr.head.repo !== null && pr.head.repo.id === pr.base.repo.id && pr.head.ref === branch;
    return own ? { head: pr.head.sha, draft: pr.draft ?? false, open: pr.state === 'open' } : undefined;
  }

  requiredChecks(branch: string): Promise<string[] | null> {
    return readRequiredChecks(this.o, this.owner, this.repo, branch);
  }

  headChecks(sha: string, ownAppId: number | undefined): Promise<RepoCheck[]> {
    return readHeadChecks(this.o, this.owner, this.repo, sha, ownAppId);
  }

  checkFailure(check: RepoCheck): Promise<CheckFailureDetail> {
    return readCheckFailure(this.o, this.owner, this.repo, check);
  }

  /** The same mutation twice leaves the PR as it was asked: Octokit's retries may resend it. */
  async setDraft(prNumber: number, draft: boolean): Promise<void> {
    const { data: pr } = await this.o.rest.pulls.get({ owner: this.owner, repo: this.repo, pull_number: prNumber });
    if ((pr.draft ?? false) === draft) return;
    if (draft) await this.o.graphql('mutation($id: ID!) { convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { isDraft } } }', { id: pr.node_id, ...writeOptions('normal') });
    else await markPullRequestReady(this.o, pr.node_id);
  }

  /** A reaction is the same object when sent twice, so Octokit's retries may resend it. */
  async react(commentId: number, content: Reaction): Promise<void> {
    await this.o.rest.reactions.createForIssueComment({ owner: this.owner, repo: this.repo, comment_id: commentId, content, ...writeOptions('normal') });
  }
}

/** The App's way to an event's forge: its installation's Octokit, bound to the event's repository; the App's id asked once. */
export function octokitIssueForgeFor(auth: (installationId: number) => Promise<Octokit>): IssueForgeFor {
  let appId: Promise<number> | undefined;
  return async (e: EventBase) => {
    const o = await auth(e.installationId);
    const ownAppId = () => {
      appId ??= appIdentity(o)
        .then((a) => a.id)
        .catch((err: unknown) => {
          appId = undefined; // asked again next time
          throw err;
        });
      return appId;
    };
    return new OctokitIssueForge(o, e.owner, e.repo, undefined, ownAppId);
  };
}

/** The draft made ready for review (GraphQL only: REST cannot). */
export async function markPullRequestReady(o: Octokit, nodeId: string): Promise<void> {
  await o.graphql('mutation($id: ID!) { markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } } }', { id: nodeId, ...writeOptions('normal') });
}
