import { inertLine } from '../common/inert-text.js';
import type { GoalSnapshot } from '../goal/result.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { GitHubGoal } from '../steering/goal-meta.js';
import { renderChanges } from '../steering/report/pull-request.js';
import { type AttemptView, taskProofs } from '../steering/report/record.js';
import { checklist, type Links } from '../steering/report/status-comment.js';
import { createOnce } from './create-once.js';
import type { Octokit } from './github-forge.js';
import { createOptions, writeOptions } from './write-options.js';

export interface FoundPullRequest {
  number: number;
  url: string;
  node_id: string;
  draft: boolean;
  /** The head commit's sha, as GitHub has it. */
  head: string;
  /** As GitHub has it. */
  body: string;
}

/**
 * The goal's pull request: found by its head (the goal branch, in this repository), opened as a
 * draft once, its body written only when it changes. Its number and URL are kept in the goal's meta.
 */
export class GoalPullRequest {
  /** When this process last wrote the PR's body (opened it, or edited it); 0: never. */
  bodyWrittenAt = 0;

  constructor(
    private readonly o: Octokit,
    private readonly g: GitHubGoal,
    private readonly key: GoalKey,
    private readonly ledger: Pick<GoalLedger, 'setMeta'>,
  ) {}

  body(s: GoalSnapshot, record: readonly AttemptView[]): string {
    const links: Links = { repoUrl: this.g.htmlUrl };
    const changes = renderChanges(s, record, { repoUrl: this.g.htmlUrl, goalId: this.key.goalId });
    return `Closes #${this.g.issueNumber}\n\nThis pull request is built by goal-loop, one verified checkpoint commit per task.\n\n${checklist(s, links, taskProofs(record, s))}\n${changes ? `\n${changes}\n` : ''}`;
  }

  /** Sends the PR body only when it differs from what GitHub shows (read when the PR was looked up). */
  async updateBody(pr: FoundPullRequest, body: string): Promise<void> {
    if (pr.body === body) return;
    await this.o.rest.pulls.update({ owner: this.g.owner, repo: this.g.repo, pull_number: pr.number, body, ...writeOptions('normal') });
    this.bodyWrittenAt = Date.now();
  }

  /** The PR whose head is the goal branch (any state), from the ledger or by asking GitHub. */
  async find(): Promise<FoundPullRequest | undefined> {
    const { data } = await this.o.rest.pulls.list({ owner: this.g.owner, repo: this.g.repo, head: `${this.g.owner}:${this.g.branch}`, state: 'all', per_page: 10 });
    // Only a pull request whose head is in this repository: a fork's branch may carry the same name.
    const pr = data.find((p) => p.head.ref === this.g.branch && p.head.repo !== null && p.head.repo.id === p.base.repo.id);
    if (!pr) return undefined;
    await this.ledger.setMeta(this.key, { prNumber: pr.number, prUrl: pr.html_url });
    return { number: pr.number, url: pr.html_url, node_id: pr.node_id, draft: pr.draft ?? false, head: pr.head.sha, body: pr.body ?? '' };
  }

  /** The goal's PR, opened as a draft with its body as it is now when there is none. */
  async ensure(s: GoalSnapshot, record: readonly AttemptView[]): Promise<FoundPullRequest> {
    const found = await this.find();
    if (found) return found;
    const body = this.body(s, record);
    const pr = await createOnce({
      find: () => this.find(),
      create: async () => {
        const { data } = await this.o.rest.pulls.create({
          owner: this.g.owner,
          repo: this.g.repo,
          head: this.g.branch,
          base: this.g.defaultBranch,
          title: `goal #${this.g.issueNumber}: ${inertLine(s.objective, 200)}`,
          body,
          draft: true,
          ...createOptions('normal'),
        });
        return { number: data.number, url: data.html_url, node_id: data.node_id, draft: data.draft ?? true, head: data.head.sha, body: data.body ?? '' };
      },
    });
    this.bodyWrittenAt = Date.now();
    await this.ledger.setMeta(this.key, { prNumber: pr.number, prUrl: pr.url });
    return pr;
  }
}
