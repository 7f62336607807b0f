import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { GitHubGoal } from '../steering/goal-meta.js';
import { type ChecksVerdict, checksVerdict } from '../steering/repo-checks.js';
import type { Octokit } from './github-forge.js';
import { markPullRequestReady } from './octokit-issue-forge.js';
import { readHeadChecks, readRequiredChecks } from './repo-checks-reader.js';

/** What a finished goal's draft waits for: the repository's checks on its head (DESIGN.md §11). */
export type Readiness = 'ready' | 'wait';

/**
 * Pure: a finished goal's draft is ready when every counted check on its head passed; when none
 * is there, at once if the repository has no CI (nothing on its base branch's tip either), else
 * once the grace period has passed with still none. Failing or running checks keep it a draft
 * (their completion events decide then).
 */
export function readiness(verdict: ChecksVerdict, o: { baseHasChecks: boolean; graceOver: boolean }): Readiness {
  if (verdict === 'passed') return 'ready';
  if (verdict === 'none') return !o.baseHasChecks || o.graceOver ? 'ready' : 'wait';
  return 'wait';
}

export interface ReadinessDeps {
  o: Octokit;
  g: GitHubGoal;
  key: GoalKey;
  ledger: Pick<GoalLedger, 'setMeta'>;
  /** This App's id: its own check runs are not the repository's CI. */
  ownAppId: () => Promise<number | undefined>;
}

/**
 * A finished goal's draft PR at head `head`: made ready when the repository's checks on it allow
 * it, else the head is recorded as awaiting its checks (`checksAwaited`, with the verdict), which
 * a check's completion (decide/head-checked.ts), the run's end (a failing verdict:
 * checks-after-run.ts) or the status turn after the grace period settles. The verdict.
 */
export async function settleDraft(d: ReadinessDeps, pr: { nodeId: string; head: string }, o: { graceOver: boolean }): Promise<ChecksVerdict> {
  const ownAppId = await d.ownAppId();
  const [required, checks] = await Promise.all([readRequiredChecks(d.o, d.g.owner, d.g.repo, d.g.defaultBranch), readHeadChecks(d.o, d.g.owner, d.g.repo, pr.head, ownAppId)]);
  const verdict = checksVerdict(checks, required);
  // Whether the repository has CI at all is asked only when the head has no check yet.
  const baseHasChecks = verdict === 'none' && !o.graceOver ? await repositoryHasCi(d, ownAppId) : false;
  const r = readiness(verdict, { baseHasChecks, graceOver: o.graceOver });
  if (r === 'ready') {
    await markPullRequestReady(d.o, pr.nodeId);
    await d.ledger.setMeta(d.key, { checksAwaited: null });
  } else {
    await d.ledger.setMeta(d.key, { checksAwaited: { sha: pr.head, since: new Date().toISOString(), verdict } });
  }
  return verdict;
}

/**
 * The repository runs CI: checks on its base branch's tip, or any Actions workflow (one that runs
 * only on pull requests leaves no check on the base branch).
 */
async function repositoryHasCi(d: ReadinessDeps, ownAppId: number | undefined): Promise<boolean> {
  if ((await readHeadChecks(d.o, d.g.owner, d.g.repo, d.g.defaultBranch, ownAppId)).length > 0) return true;
  try {
    // Workflow files the repository has, active (not GitHub's own dynamic ones: Pages, CodeQL's default setup).
    const workflows = await d.o.paginate(d.o.rest.actions.listRepoWorkflows, { owner: d.g.owner, repo: d.g.repo, per_page: 100 });
    return workflows.some((w) => w.state === 'active' && w.path.startsWith('.github/workflows/'));
  } catch (err) {
    // An installation without `actions: read` cannot tell: the base branch's checks decide.
    if ((err as { status?: number }).status === 403 || (err as { status?: number }).status === 404) return false;
    throw err;
  }
}
