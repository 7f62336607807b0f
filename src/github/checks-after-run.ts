import type { Logger } from 'pino';
import type { RepoConfig } from '../config/repo-config.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { GoalMode } from '../ports/queue.js';
import type { EventOf } from '../steering/events.js';
import type { GitHubGoal } from '../steering/goal-meta.js';
import { readGitHubMeta } from '../steering/goal-meta.js';
import { EventProcessor } from '../steering/handle/event-processor.js';
import type { GitHubForge, Octokit } from './github-forge.js';
import { OctokitIssueForge } from './octokit-issue-forge.js';

export interface ChecksAfterRunDeps {
  ledger: GoalLedger;
  logger: Logger;
  /** Goal work later (durably); delay 0: as soon as a worker is free. */
  later?: (key: GoalKey, mode: GoalMode, priority: string, delayMs: number) => Promise<void>;
  configPath?: string;
}

/**
 * What a goal owes its base branch and the repository's checks when a turn of it ends (a run's
 * end, or the status turn after the grace period): a base that moved during the run is followed
 * by another run; a head whose checks fail is handed to the same policy as a failing check's
 * event (decide/head-checked.ts: a fix task, or an escalation); a head without checks yet is
 * looked at again after `checks_grace_s`.
 */
export async function checksAfterTurn(deps: ChecksAfterRunDeps, t: { key: GoalKey; g: GitHubGoal; octokit: Octokit; forge: GitHubForge; config: RepoConfig; graceTurn: boolean }): Promise<void> {
  const goal = await deps.ledger.getGoal(t.key);
  if (!goal) return;
  const meta = readGitHubMeta(goal.meta);
  if (meta.baseMovedDuringRun !== undefined && !t.graceTurn) {
    await deps.ledger.setMeta(t.key, { baseMovedDuringRun: null });
    // Only a goal that rests complete goes on by itself: an escalated or stopped one waits for its human.
    if (goal.state === 'LOOP_COMPLETE') return deps.later?.(t.key, 'run', goal.priority, 0);
  }
  const awaited = goal.state === 'LOOP_COMPLETE' ? meta.checksAwaited : undefined;
  if (!awaited) return;
  if (awaited.verdict === 'failing') return handFailure(deps, t, awaited.sha);
  const leftMs = Date.parse(awaited.since) + t.config.checks_grace_s * 1000 - Date.now();
  if (t.graceTurn && leftMs <= 0) {
    const verdict = await t.forge.settleAwaitedChecks();
    if (verdict === 'failing') await handFailure(deps, t, (await readMetaNow(deps, t.key))?.sha ?? awaited.sha);
    return;
  }
  await deps.later?.(t.key, 'status', goal.priority, Math.max(leftMs, 0));
}

async function readMetaNow(deps: ChecksAfterRunDeps, key: GoalKey) {
  const goal = await deps.ledger.getGoal(key);
  return goal ? readGitHubMeta(goal.meta).checksAwaited : undefined;
}

/** The head's failing checks, decided as their event would be (this turn is over: the goal counts as not running). */
async function handFailure(deps: ChecksAfterRunDeps, t: { key: GoalKey; g: GitHubGoal; octokit: Octokit; forge: GitHubForge }, sha: string): Promise<void> {
  const { g } = t;
  const processor = new EventProcessor({
    ledger: deps.ledger,
    logger: deps.logger,
    schedule: async (key, mode, priority) => deps.later?.(key, mode, priority, 0),
    isRunning: async () => false,
    cancel: async () => undefined,
    forgeFor: async () => new OctokitIssueForge(t.octokit, g.owner, g.repo, deps.configPath, () => t.forge.ownAppId()),
  });
  const event: EventOf<'head_checked'> = {
    deliveryId: `turn-end:${t.key.goalId}:${sha}`,
    installationId: g.installationId,
    owner: g.owner,
    repo: g.repo,
    sender: 'goal-loop',
    repository: { name: g.repo, owner: { login: g.owner }, clone_url: g.cloneUrl, html_url: g.htmlUrl, default_branch: g.defaultBranch },
    type: 'head_checked',
    sha,
    branches: [g.branch],
    // The policy reads the head's checks itself; this one only says that some failed.
    check: { source: 'check_run', name: 'the repository checks', id: 0, appId: null, appSlug: null, completed: true, conclusion: 'failure', detailsUrl: null, output: null },
  };
  await processor.handle(event);
}
