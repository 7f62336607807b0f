import type { Octokit } from '../github/github-forge.js';
import type { GoalEvent, PullRef } from '../steering/events.js';

/** The issue number a goal branch belongs to: `goal/<issue>-<slug>` (or `goal/<issue>`). */
export function issueOfBranch(branch: string): number | undefined {
  const m = /^goal\/(\d+)(?:-|$)/.exec(branch);
  const n = m ? Number(m[1]) : Number.NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** The goal branch's issue for a pull request whose head is in this repository (a fork's branch may carry any name). */
function issueOfPull(p: Pick<PullRef, 'headRef' | 'headRepo' | 'baseRepo'>): number | undefined {
  if (!p.headRepo || p.headRepo.id !== p.baseRepo.id) return undefined;
  return issueOfBranch(p.headRef);
}

/**
 * Which goal an event is about, by its issue: the issue itself, or for a pull request the issue its
 * goal branch names (the policy then checks the goal's record names that pull request). A run
 * rebuilds only that goal from GitHub.
 */
export async function goalIssueOf(o: Octokit, e: GoalEvent): Promise<number | undefined> {
  switch (e.type) {
    case 'labeled':
    case 'unlabeled':
    case 'issue_closed':
      return e.issue.number;
    case 'command': {
      if (!e.isPullRequest) return e.issue.number;
      const { data } = await o.rest.pulls.get({ owner: e.owner, repo: e.repo, pull_number: e.issue.number });
      const ref = (r: { id: number; full_name: string } | null) => (r ? { id: r.id, fullName: r.full_name } : null);
      return issueOfPull({ headRef: data.head.ref, headRepo: ref(data.head.repo), baseRepo: ref(data.base.repo)! });
    }
    case 'pr_closed':
    case 'review':
      return issueOfPull(e);
    case 'base_pushed':
    case 'head_checked':
      // Not events the Action subscribes to: its goals follow the base at their next run, and its
      // PRs are made ready at once (a push with the workflow's token starts no workflow).
      return undefined;
  }
}
