import { slugify } from '../goal/slug.js';
import type { GoalKey } from '../ports/ledger.js';
import { type GitHubGoal, readGitHubMeta } from './goal-meta.js';

/** What the worker needs to know about a goal's home on GitHub; kept in the ledger's meta (goal-meta.ts). */
export type { GitHubGoal } from './goal-meta.js';

/** Ledger identity of an issue's goal: the repository's full name and the issue number. */
export function goalKeyFor(owner: string, repo: string, issueNumber: number): GoalKey {
  return { repo: `${owner}/${repo}`, goalId: String(issueNumber) };
}

export function goalBranch(issueNumber: number, title: string): string {
  const slug = slugify(title, 40);
  return `goal/${issueNumber}${slug ? `-${slug}` : ''}`;
}

interface IssueLike {
  number: number;
  title: string;
  user: { login: string } | null;
  assignees?: Array<{ login: string } | null> | null;
}

interface RepositoryLike {
  name: string;
  owner: { login: string };
  clone_url: string;
  html_url: string;
  default_branch: string;
}

export function githubGoalFrom(repository: RepositoryLike, issue: IssueLike, installationId: number): GitHubGoal {
  return {
    owner: repository.owner.login,
    repo: repository.name,
    installationId,
    issueNumber: issue.number,
    issueTitle: issue.title,
    cloneUrl: repository.clone_url,
    htmlUrl: repository.html_url,
    defaultBranch: repository.default_branch,
    branch: goalBranch(issue.number, issue.title),
    author: issue.user?.login ?? 'ghost',
    assignees: (issue.assignees ?? []).flatMap((a) => (a ? [a.login] : [])),
  };
}

/** The goal's GitHub home from its meta, read through the schema; undefined when absent or malformed. */
export function readGitHubGoal(meta: Record<string, unknown>): GitHubGoal | undefined {
  return readGitHubMeta(meta).github;
}
