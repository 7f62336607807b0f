import type { Logger } from 'pino';
import { childLogger } from '../common/child-logger.js';
import type { GoalSnapshot } from '../goal/result.js';
import { drainEffects, effectOnceId, effectsRecorded, LOOP_EFFECT_KINDS, PUSH_EFFECT, performLoopEffect, recordedEffect } from '../loop/outbox.js';
import { PushTracker } from '../loop/push-effects.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { GoalChange, GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { EffectInput, Outbox, PendingEffect } from '../ports/outbox.js';
import type { Workspace } from '../ports/workspace.js';
import { type IssueEffect, SYNC } from '../steering/effects.js';
import { type GitHubGoal, readGitHubMeta } from '../steering/goal-meta.js';
import { snapshotFromLedger } from '../steering/turn/snapshot.js';
import { effectMarker, GitHubForge, type Octokit } from './github-forge.js';
import { type GoalWorkspaceDeps, goalCheckpointPusher } from './goal-workspace.js';

/** An issue effect (steering/effects.ts) as it is recorded: a comment with the nonce its marker carries (loop/outbox.ts recordedEffect). */
export const githubEffect = (e: IssueEffect): EffectInput => (e.kind === 'comment' ? recordedEffect(e) : e);

/** Performs one of the goal's effects on GitHub; `snapshot` is the goal as it is now. */
export function githubEffectPerformer(forge: GitHubForge): (e: PendingEffect, snapshot: GoalSnapshot) => Promise<void> {
  return async (e, snapshot) => {
    if (LOOP_EFFECT_KINDS.has(e.kind)) return performLoopEffect(forge, e, snapshot);
    const effect = { kind: e.kind, payload: e.payload } as IssueEffect;
    switch (effect.kind) {
      case 'comment':
        return forge.comment(effect.payload.issueNumber, effect.payload.body, { marker: effectMarker(effectOnceId(e)), retry: e.attempts > 1 });
      case 'sync':
        return forge.flush(snapshot);
      default:
        throw new Error(`unknown effect kind ${e.kind}`);
    }
  };
}

export interface GoalEffectsDeps {
  ledger: GoalLedger & Outbox;
  logger: Logger;
  /** Who performs them (the worker or server id). */
  holder: string;
  /** How long one try keeps others away (the lease time). */
  claimMs: number;
}

/**
 * Performs a GitHub goal's pending effects outside a run (the snapshot from the ledger): when a
 * turn starts, after a turn's own write, and for the sweep. Returns how many were done.
 */
export async function performGoalEffects(deps: GoalEffectsDeps & { forge: GitHubForge; goal: GitHubGoal; pusher?: () => Workspace }, key: GoalKey): Promise<number> {
  const perform = githubEffectPerformer(deps.forge);
  let pusher: Workspace | undefined;
  const pushes = new PushTracker();
  return drainEffects({
    outbox: deps.ledger,
    key,
    holder: deps.holder,
    claimMs: deps.claimMs,
    logger: deps.logger,
    perform: async (e) => {
      if (pushes.reportsLostCheckpoint(e)) return; // its commit never reached GitHub: nothing to report
      if (e.kind !== PUSH_EFFECT) return perform(e, await snapshotFromLedger(deps.ledger, key, deps.goal));
      pusher ??= deps.pusher!();
      // Outside a run: a failure that may pass is left to the outbox's retries.
      return pushes.perform(pusher, e, deps.logger, false);
    },
    // A checkpoint's push needs the goal's clone: without one to push from, it and what follows wait for the goal's next run.
    stopAt: (e) => e.kind === PUSH_EFFECT && !deps.pusher,
    onGivenUp: (e) => showGivenUp(deps.ledger, key, e),
  });
}

/**
 * A given-up report is shown on the issue: a `sync` renders the status comment, which lists the
 * goal's given-up effects. A given-up `sync` records none (GitHub is not taking them: no loop).
 */
export async function showGivenUp(ledger: Pick<GoalLedger, 'recordChange'>, key: GoalKey, e: PendingEffect): Promise<void> {
  if (e.kind === 'sync') return;
  await ledger.recordChange(key, { effects: [SYNC] });
}

/** A turn's step, written with its effects in one transaction, then performed. */
export async function recordAndPerform(deps: GoalEffectsDeps & { forge: GitHubForge; goal: GitHubGoal }, key: GoalKey, change: GoalChange): Promise<void> {
  await deps.ledger.recordChange(key, change);
  if (!change.effects?.length) return;
  effectsRecorded(change.effects);
  await performGoalEffects(deps, key);
}

/** The sweep's way in: a goal's forge from its record, then its pending effects performed. */
export async function settleGoalEffects(
  deps: GoalEffectsDeps & { ledger: AttemptLog; auth: (installationId: number) => Promise<Octokit>; workspaces?: GoalWorkspaceDeps },
  key: GoalKey,
): Promise<number> {
  const record = await deps.ledger.getGoal(key);
  const g = record && readGitHubMeta(record.meta).github;
  if (!g) return 0;
  const log = childLogger(deps.logger, { goal: `${key.repo}#${key.goalId}` });
  const octokit = await deps.auth(g.installationId);
  const forge = new GitHubForge({ octokit, goal: g, key, ledger: deps.ledger, attemptLog: deps.ledger, logger: log, minUpdateIntervalMs: 0 });
  const { workspaces } = deps;
  return performGoalEffects({ ...deps, logger: log, forge, goal: g, ...(workspaces ? { pusher: () => goalCheckpointPusher(workspaces, octokit, g, key.goalId) } : {}) }, key);
}
