import type { Logger } from 'pino';
import { childLogger } from '../common/child-logger.js';
import { configLimits, type RepoConfig, RepoConfigError } from '../config/repo-config.js';
import { extractGoalBlock } from '../goal/parse.js';
import type { LoopResult } from '../goal/result.js';
import type { GoalSpec } from '../goal/schema.js';
import type { Usage } from '../goal/usage.js';
import type { LoopLedger } from '../loop/controller.js';
import type { TaskAgent } from '../ports/agent.js';
import type { GoalKey, GoalRecord } from '../ports/ledger.js';
import type { GoalMode } from '../ports/queue.js';
import { type Sandbox, SandboxUnavailableError } from '../ports/sandbox.js';
import type { AgentContext } from '../run/compose-goal-run.js';
import { runConfiguredGoal } from '../run/run-configured-goal.js';
import { SYNC } from '../steering/effects.js';
import { type GitHubGoal, readGitHubMeta } from '../steering/goal-meta.js';
import { settleRestingControl } from '../steering/handle/resting-control.js';
import { planFromIssue } from '../steering/plan-from-issue.js';
import { acceptedPlan } from '../steering/turn/accepted-plan.js';
import { decideTurn, type TurnFacts } from '../steering/turn/decide-turn.js';
import { humanLimits, snapshotFromLedger } from '../steering/turn/snapshot.js';
import type { GitWorkspace } from '../workspace/git-workspace.js';
import { type ChecksAfterRunDeps, checksAfterTurn } from './checks-after-run.js';
import { GitHubForge, type GitHubForgeOptions, type Octokit } from './github-forge.js';
import { type GoalWorkspaceDeps, githubGoalWorkspace, goalCheckpointPusher, goalWorkspaceDir, releaseGoalWorkspace } from './goal-workspace.js';
import { githubEffect, githubEffectPerformer, performGoalEffects, recordAndPerform } from './outbox-effects.js';
import { loadRepoConfig } from './repo-config-loader.js';

export { snapshotFromLedger } from '../steering/turn/snapshot.js';
export { releaseGoalWorkspace } from './goal-workspace.js';

export interface WorkGoalDeps extends GoalWorkspaceDeps {
  /** The goal's record, its attempts and its effects. */
  ledger: LoopLedger;
  logger: Logger;
  /** An Octokit authenticated as the installation. */
  auth: (installationId: number) => Promise<Octokit>;
  sandboxFor: (config: RepoConfig) => Promise<Sandbox>;
  minUpdateIntervalMs?: number;
  controlPollMs?: number;
  /** Fires when this worker must let go of the goal (lease lost, shutdown). */
  abandon?: AbortSignal;
  /** Push each checkpoint before the next task (RunGoalOptions.inlinePushes): the Action, whose ledger ends with its runner. */
  inlinePushes?: boolean;
  /** Re-checks this worker's hold on the goal before each transition is written. */
  fence?: () => Promise<boolean>;
  /** Who performs the goal's outbox effects (the worker id). */
  workerId: string;
  /** How long one try of an effect keeps others away (the lease time). */
  effectClaimMs: number;
  /** The Claude agent for a run, when a model is configured. */
  agentFor?: (ctx: AgentContext) => TaskAgent | undefined;
  /** How a GitHub Action's run reports (who it writes as, what the status comment carries); the App's: none. */
  forgeOptions?: Pick<GitHubForgeOptions, 'identity' | 'checkRuns' | 'awaitRepoChecks' | 'carry' | 'progress'>;
  /** Where the owner's config is on the default branch; default `.github/goal-loop.yml`. */
  configPath?: string;
  /** Goal work later (durably): a run after a base that moved meanwhile, a status turn after the checks' grace period. */
  later?: (key: GoalKey, mode: GoalMode, priority: string, delayMs: number) => Promise<void>;
  /** The repository event leases (the intake's): a failing head found at a turn's end is decided under them. */
  leases?: ChecksAfterRunDeps['leases'];
  /** Claude's planner, when a model is configured: writes a spec for an issue without a goal block. */
  planner?: (input: { objective: string; repoDir: string; goalId: string; config: RepoConfig }) => Promise<{ spec: GoalSpec; usage: Usage; costUsd: number }>;
}

/**
 * One turn of a GitHub goal, decide then act: `decideTurn` (pure) names the next step from what
 * is known, this function performs it (reads the config and the issue, asks the planner, opens
 * the sandbox, runs the loop, comments) and adds what it learned, until a step ends the turn.
 */
export async function workGoal(deps: WorkGoalDeps, key: GoalKey, mode: GoalMode): Promise<void> {
  const goal = await deps.ledger.getGoal(key);
  const meta = goal && readGitHubMeta(goal.meta);
  const g = meta?.github;
  if (!goal || !meta || !g) return;
  const log = childLogger(deps.logger, { goal: `${key.repo}#${key.goalId}` });
  const octokit = await deps.auth(g.installationId);
  const forge = new GitHubForge({
    octokit,
    goal: g,
    key,
    ledger: deps.ledger,
    attemptLog: deps.ledger,
    workspaceDir: goalWorkspaceDir(deps.workspaceRoot, g),
    logger: log,
    ...(deps.minUpdateIntervalMs !== undefined ? { minUpdateIntervalMs: deps.minUpdateIntervalMs } : {}),
    ...deps.forgeOptions,
  });
  const effects = { ledger: deps.ledger, logger: log, holder: deps.workerId, claimMs: deps.effectClaimMs, forge, goal: g, pusher: () => goalCheckpointPusher(deps, octokit, g, key.goalId) };
  // What a turn killed earlier left undone (a comment, a label) is done first.
  await performGoalEffects(effects, key);
  const facts: TurnFacts = {
    mode,
    state: goal.state,
    config: await readConfig(octokit, g, deps.configPath),
    meta: { planApproved: meta.planApproved, hasPlannedSpec: meta.plannedSpec !== undefined, templatePosted: meta.templatePosted },
    hasPlanner: deps.planner !== undefined,
  };
  let issue: { title: string; body?: string | null | undefined } | undefined;
  const readIssue = async () => (await octokit.rest.issues.get({ owner: g.owner, repo: g.repo, issue_number: g.issueNumber })).data;
  let workspace: GitWorkspace | undefined;
  let sandbox: Sandbox | undefined;
  while (true) {
    const step = decideTurn(facts);
    switch (step.kind) {
      case 'rest':
        // The state, the comment and the label it implies: one write, then performed (the outbox).
        return recordAndPerform(effects, key, {
          transitions: [{ to: step.state, event: mode, detail: step.reason, stopReason: step.reason }],
          ...(step.markTemplatePosted ? { meta: { templatePosted: true } } : {}),
          effects: [...(step.comment ? [githubEffect({ kind: 'comment', payload: { issueNumber: g.issueNumber, body: step.comment } })] : []), SYNC],
        });
      case 'status':
        if (await settleRestingControl(deps.ledger, key)) await performGoalEffects(effects, key);
        // First what the checks owe (a draft made ready, a fix task), so the comment shows it.
        await checksAfterTurn(deps, { key, g, octokit, forge, config: step.config, graceTurn: true });
        return forge.flush(await snapshotFromLedger(deps.ledger, key, g, configLimits(step.config)));
      case 'read-plan': {
        // The status comment appears at once, before any planning (within the forge's settle time:
        // a goal that runs at once shows its running state in the same write).
        if (step.announce) await forge.update(await snapshotFromLedger(deps.ledger, key, g, configLimits(step.config)));
        workspace = githubGoalWorkspace(deps, octokit, g, key.goalId, step.config);
        const plannedSpec = mode === 'plan' ? undefined : meta.plannedSpec;
        // The spec at acceptance: the event side parsed the issue once; read it from GitHub only for a goal accepted without it.
        const accepted = acceptedPlan(meta.issuePlan, goal.spec, key.goalId, meta.extraTasks, plannedSpec);
        if (accepted) {
          facts.issue = accepted;
          if (accepted.plan.kind === 'spec' && accepted.hasBlock) facts.specStored = true; // it is the ledger's spec
        } else {
          issue = await readIssue();
          const plan = planFromIssue(issue.body ?? '', key.goalId, meta.extraTasks, plannedSpec);
          facts.issue = { plan, hasBlock: extractGoalBlock(issue.body ?? '') !== undefined };
        }
        break;
      }
      case 'write-plan':
        // The planner writes from the issue's own words.
        issue ??= await readIssue();
        facts.written = await writePlan(deps, key, workspace!, issue, step.config, meta.extraTasks);
        break;
      case 'store-spec':
        await deps.ledger.upsertGoal(key, { spec: step.spec, branch: g.branch });
        facts.specStored = true;
        break;
      case 'open-sandbox':
        try {
          sandbox = await deps.sandboxFor(step.config);
          facts.sandbox = { ok: true };
        } catch (err) {
          if (!(err instanceof SandboxUnavailableError)) throw err;
          facts.sandbox = { ok: false, message: err.message };
        }
        break;
      case 'run': {
        // This run follows the base at its start, and its end judges its own head's checks.
        if (meta.baseMovedDuringRun !== undefined || meta.checksAwaited !== undefined) await deps.ledger.setMeta(key, { baseMovedDuringRun: null, checksAwaited: null });
        let result: LoopResult;
        try {
          result = await runLoop(deps, { key, goal, g, log, forge, workspace: workspace!, sandbox: sandbox!, config: step.config, spec: step.spec });
        } finally {
          // The turn opened the sandbox: the jails it started ahead end with the run, before the clone goes.
          await sandbox?.dispose?.().catch((err: unknown) => log.warn({ err }, 'cannot stop the sandbox'));
        }
        // The goal rests: its clone goes (the branch on GitHub is the truth; the mirror stays warm).
        if (result.status !== 'PAUSED') await releaseGoalWorkspace(deps, g).catch((err: unknown) => log.warn({ err }, 'cannot remove the goal workspace'));
        log.info({ status: result.status, stop_reason: result.stop_reason }, 'goal run ended');
        return checksAfterTurn(deps, { key, g, octokit, forge, config: step.config, graceTurn: false });
      }
    }
  }
}

/** `.github/goal-loop.yml` from the base branch, or what is wrong with it. */
async function readConfig(octokit: Octokit, g: GitHubGoal, path?: string): Promise<TurnFacts['config']> {
  try {
    return { ok: true, config: await loadRepoConfig(octokit, g.owner, g.repo, path) };
  } catch (err) {
    if (!(err instanceof RepoConfigError)) throw err;
    return { ok: false, problems: err.problems };
  }
}

/** No goal block: Claude writes the plan from the issue and a clone of the repository. */
async function writePlan(
  deps: WorkGoalDeps,
  key: GoalKey,
  workspace: GitWorkspace,
  issue: { title: string; body?: string | null | undefined },
  config: RepoConfig,
  extraTasks: unknown,
): Promise<NonNullable<TurnFacts['written']>> {
  await workspace.prepare();
  try {
    const written = await deps.planner!({ objective: `${issue.title}\n\n${issue.body ?? ''}`, repoDir: workspace.dir, goalId: key.goalId, config });
    await deps.ledger.addCounters(key, { tokens: written.usage, cost_usd: written.costUsd });
    await deps.ledger.setMeta(key, { plannedSpec: written.spec, planApproved: false });
    return { ok: true, plan: planFromIssue('', key.goalId, extraTasks, written.spec) };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

interface RunInput {
  key: GoalKey;
  goal: GoalRecord;
  g: GitHubGoal;
  log: Logger;
  forge: GitHubForge;
  workspace: GitWorkspace;
  sandbox: Sandbox;
  config: RepoConfig;
  spec: GoalSpec;
}

/**
 * The loop on the goal's spec, composed from the repo config (limits, commands, agent) with the
 * human's budget, in the workspace it planned in and the sandbox the turn opened; the goal's MCP
 * servers stop with it.
 */
async function runLoop(deps: WorkGoalDeps, r: RunInput): Promise<LoopResult> {
  const human = humanLimits(r.goal);
  return runConfiguredGoal({
    repo: r.key.repo,
    spec: r.spec,
    config: r.config,
    workspace: r.workspace,
    sandbox: r.sandbox,
    ...(deps.agentFor ? { agent: deps.agentFor } : {}),
    ...(human ? { humanLimits: human } : {}),
    ledger: deps.ledger,
    forge: r.forge,
    logger: r.log,
    priority: r.goal.priority,
    // A pause or stop recorded while the goal waited for a worker is the human's newest word.
    honorPendingControl: true,
    ...(deps.abandon ? { abandon: deps.abandon } : {}),
    ...(deps.fence ? { fence: deps.fence } : {}),
    ...(deps.controlPollMs !== undefined ? { controlPollMs: deps.controlPollMs } : {}),
    performEffect: githubEffectPerformer(r.forge),
    ...(deps.inlinePushes ? { inlinePushes: true } : {}),
    // main moved since the goal branch left it: the PR is brought onto it (DESIGN.md §11).
    followBase: r.config.follow_base,
    effectHolder: deps.workerId,
    effectClaimMs: deps.effectClaimMs,
  });
}
