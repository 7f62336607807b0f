import type { Logger } from 'pino';
import type { RepoConfig } from '../config/repo-config.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { Leases } from '../ports/leases.js';
import type { GoalMode } from '../ports/queue.js';
import type { EventOf } from '../steering/events.js';
import { type GitHubGoal, readGitHubMeta } from '../steering/goal-meta.js';
import { EventProcessor } from '../steering/handle/event-processor.js';
import { withLease } from '../worker/lease.js';
import type { GitHubForge, Octokit } from './github-forge.js';
import { OctokitIssueForge } from './octokit-issue-forge.js';

export interface ChecksAfterRunDeps {
  ledger: GoalLedger;
  logger: Logger;
  /** Goal work later (durably); delay 0: as soon as a worker is free. */
  later?: (key: GoalKey, mode: GoalMode, priority: string, delayMs: number) => Promise<void>;
  /** The repository's event lease (the intake's): a failing head is decided as its events are, one at a time. */
  leases?: { ledger: Leases; holder: string };
  configPath?: string;
}

export interface TurnEnd {
  key: GoalKey;
  g: GitHubGoal;
  octokit: Octokit;
  forge: GitHubForge;
  config: RepoConfig;
  /** A status turn (the grace period's, or any other); false: a run's end. */
  graceTurn: boolean;
}

/** How long a turn waits before it looks again at a failing head it could not hand over. */
const RETRY_MS = 60_000;

/**
 * What a goal owes its base branch and the repository's checks when a turn of it ends (a run's
 * end, or a status turn): a base that moved during the run is followed by another run; a head
 * whose checks fail is handed to the same policy as a failing check's event
 * (decide/head-checked.ts: a fix task, or an escalation); a head without checks yet is looked at
 * again after `checks_grace_s`. A status turn reads the PR's head again rather than trust what
 * the run's end saw.
 */
export async function checksAfterTurn(deps: ChecksAfterRunDeps, t: TurnEnd): Promise<void> {
  const goal = await deps.ledger.getGoal(t.key);
  if (!goal) return;
  const meta = readGitHubMeta(goal.meta);
  if (meta.baseMovedDuringRun !== undefined) {
    await deps.ledger.setMeta(t.key, { baseMovedDuringRun: null });
    // Only a goal that rests complete goes on by itself: an escalated or stopped one waits for its human.
    if (goal.state === 'LOOP_COMPLETE') return deps.later?.(t.key, 'run', goal.priority, 0);
  }
  const awaited = goal.state === 'LOOP_COMPLETE' ? meta.checksAwaited : undefined;
  if (!awaited) return;
  const leftMs = Date.parse(awaited.since) + t.config.checks_grace_s * 1000 - Date.now();
  if (!t.graceTurn && awaited.verdict === 'failing') {
    // A status turn looks again should the hand-over below come to nothing (GitHub's view of the PR lagging the push, say).
    await deps.later?.(t.key, 'status', goal.priority, RETRY_MS);
    await handFailure(deps, t, awaited.sha);
    return;
  }
  if (t.graceTurn && (leftMs <= 0 || awaited.verdict === 'failing')) {
    const settled = await t.forge.settleAwaitedChecks();
    if (settled?.verdict === 'failing' && !(await handFailure(deps, t, settled.head))) await deps.later?.(t.key, 'status', goal.priority, RETRY_MS);
    return;
  }
  await deps.later?.(t.key, 'status', goal.priority, Math.max(leftMs, 0));
}

/**
 * The head's failing checks, decided as their event would be, under the repository's event lease
 * (this turn is over: the goal counts as not running). False when deciding failed (logged).
 */
async function handFailure(deps: ChecksAfterRunDeps, t: TurnEnd, sha: string): Promise<boolean> {
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
  const handle = () => processor.handle(event);
  try {
    if (deps.leases) await withLease(deps.leases.ledger, `events:${g.owner}/${g.repo}`, `${deps.leases.holder}#checks`, handle, { logger: deps.logger });
    else await handle();
    return true;
  } catch (err) {
    deps.logger.warn({ err, sha }, "cannot decide the head's failing checks now; a status turn looks again");
    return false;
  }
}
