import { join } from 'node:path';
import type { Logger } from 'pino';
import { effectiveLimits, type LoopLimits } from '../goal/limits.js';
import { configLimits, RepoConfigError, type RepoConfig } from '../config/repo-config.js';
import { extractGoalBlock } from '../goal/parse.js';
import type { GoalSpec, LimitsOverride } from '../goal/schema.js';
import { runGoal } from '../loop/controller.js';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { GoalState } from '../goal/states.js';
import type { TaskAgent } from '../ports/agent.js';
import type { Usage } from '../goal/usage.js';
import type { GoalKey, GoalRecord, Ledger } from '../ports/ledger.js';
import { SandboxUnavailableError, type Sandbox } from '../ports/sandbox.js';
import { GitWorkspace, releaseWorkspace } from '../workspace/git-workspace.js';
import type { MirrorCache } from '../workspace/mirror-cache.js';
import { tokenHeaderConfig } from './git-auth.js';
import { GitHubForge, type Octokit } from './github-forge.js';
import { readGitHubGoal, type GitHubGoal } from './github-goal.js';
import type { GoalMode } from '../ports/queue.js';
import { planFromIssue, TEMPLATE_COMMENT } from './plan-from-issue.js';
import { loadRepoConfig } from './repo-config-loader.js';
import { settleRestingControl } from './resting-control.js';

export interface WorkGoalDeps {
  ledger: Ledger;
  logger: Logger;
  /** An Octokit authenticated as the installation. */
  auth: (installationId: number) => Promise<Octokit>;
  workspaceRoot: string;
  /** Clone goal workspaces from a local mirror per repository (see MirrorCache.fromEnv). */
  mirrorCache?: MirrorCache;
  sandboxFor: (config: RepoConfig) => Promise<Sandbox>;
  minUpdateIntervalMs?: number;
  controlPollMs?: number;
  /** Fires when this worker must let go of the goal (lease lost, shutdown). */
  abandon?: AbortSignal;
  /** Re-checks this worker's hold on the goal before each transition is written. */
  fence?: () => Promise<boolean>;
  identity?: { name: string; email: string };
  /** The Claude agent for a run, when a model is configured. */
  agentFor?: (sandbox: Sandbox, config: RepoConfig, taskTimeoutS: number) => TaskAgent | undefined;
  /** Claude's planner, when a model is configured: writes a spec for an issue without a goal block. */
  planner?: (input: { objective: string; repoDir: string; goalId: string; config: RepoConfig }) => Promise<{ spec: GoalSpec; usage: Usage; costUsd: number }>;
}

/** One turn of a GitHub goal: read config and plan from the issue, then run the loop. */
export async function workGoal(deps: WorkGoalDeps, key: GoalKey, mode: GoalMode): Promise<void> {
  const goal = await deps.ledger.getGoal(key);
  const g = goal && readGitHubGoal(goal.meta);
  if (!goal || !g) return;
  const log = deps.logger.child({ goal: `${key.repo}#${key.goalId}` });
  const octokit = await deps.auth(g.installationId);
  const forge = new GitHubForge({ octokit, goal: g, key, ledger: deps.ledger, logger: log, ...(deps.minUpdateIntervalMs !== undefined ? { minUpdateIntervalMs: deps.minUpdateIntervalMs } : {}) });
  const rest = async (state: GoalState, reason: string, comment?: string) => {
    await deps.ledger.setState(key, state, mode, reason, reason);
    if (comment) await octokit.rest.issues.createComment({ owner: g.owner, repo: g.repo, issue_number: g.issueNumber, body: comment });
    await forge.flush(await snapshotFromLedger(deps.ledger, key, g));
  };

  let config: RepoConfig;
  try {
    config = await loadRepoConfig(octokit, g.owner, g.repo);
  } catch (err) {
    if (!(err instanceof RepoConfigError)) throw err;
    return rest('STOPPED', 'invalid .github/goal-loop.yml', `goal-loop cannot run: \`.github/goal-loop.yml\` is invalid.\n\n${err.problems.map((p) => `- ${p}`).join('\n')}\n\nFix the file and comment \`/goal start\`.`);
  }
  if (mode === 'status') {
    await settleRestingControl(deps.ledger, key);
    return forge.flush(await snapshotFromLedger(deps.ledger, key, g, configLimits(config)));
  }

  // The status comment appears at once, before any planning.
  if (goal.state === 'INITIALIZING') await forge.flush(await snapshotFromLedger(deps.ledger, key, g, configLimits(config)));
  const issue = (await octokit.rest.issues.get({ owner: g.owner, repo: g.repo, issue_number: g.issueNumber })).data;
  const workspace = makeWorkspace(deps, octokit, g, key.goalId, config);
  let plan = planFromIssue(issue.body ?? '', key.goalId, goal.meta.extraTasks, mode === 'plan' ? undefined : goal.meta.plannedSpec);
  const modelWritten = plan.kind === 'none' && deps.planner !== undefined;
  if (plan.kind === 'none' && deps.planner) {
    // No goal block: Claude writes the plan from the issue and a clone of the repository.
    await workspace.prepare();
    try {
      const written = await deps.planner({ objective: `${issue.title}\n\n${issue.body ?? ''}`, repoDir: workspace.dir, goalId: key.goalId, config });
      await deps.ledger.addCounters(key, { tokens: written.usage, cost_usd: written.costUsd });
      await deps.ledger.setMeta(key, { plannedSpec: written.spec, planApproved: false });
      plan = planFromIssue('', key.goalId, goal.meta.extraTasks, written.spec);
    } catch (err) {
      return rest('STOPPED', 'the planner failed', `goal-loop could not write a plan for this issue:\n\n${(err as Error).message}\n\nAdd a \`\`\`goal block to the issue and comment \`/goal start\`.`);
    }
  }
  if (plan.kind === 'none') {
    const first = !goal.meta.templatePosted;
    await deps.ledger.setMeta(key, { templatePosted: true });
    return rest('STOPPED', 'the issue has no ```goal block', first ? TEMPLATE_COMMENT : undefined);
  }
  if (plan.kind === 'invalid') {
    return rest('STOPPED', 'invalid goal spec', `goal-loop cannot run the \`\`\`goal block of this issue:\n\n${plan.errors.map((e) => `- ${e}`).join('\n')}\n\nEdit the issue and comment \`/goal start\`.`);
  }
  const spec = plan.spec;
  await deps.ledger.upsertGoal(key, { spec, branch: g.branch });

  const fromModel = modelWritten || (Boolean(goal.meta.plannedSpec) && !extractsBlock(issue.body));
  const approved = modelWritten ? false : goal.meta.planApproved === true;
  if (mode === 'plan' || ((config.require_plan_approval || fromModel) && !approved)) {
    return rest(
      'AWAITING_APPROVAL',
      'the plan waits for approval',
      mode === 'plan' && !config.require_plan_approval && !fromModel && goal.meta.planApproved !== false
        ? undefined
        : `${fromModel ? 'Claude wrote a plan' : 'The plan'} (${spec.tasks.length} task${spec.tasks.length === 1 ? '' : 's'}) is in the status comment. A maintainer can start it with \`/goal approve\`, or edit the issue with a \`\`\`goal block.`,
    );
  }

  const configured = configLimits(config);
  const human = humanLimits(goal);
  let sandbox: Sandbox;
  try {
    sandbox = await deps.sandboxFor(config);
  } catch (err) {
    if (!(err instanceof SandboxUnavailableError)) throw err;
    return rest('STOPPED', 'no sandbox on this host', `goal-loop will not run this repository's commands without a sandbox:\n\n\`\`\`text\n${err.message}\n\`\`\``);
  }
  const agent = deps.agentFor?.(sandbox, config, effectiveLimits(configured, spec.limits, human).task_timeout_s);
  let result: LoopResult;
  try {
    result = await runGoal({
      repo: key.repo,
      spec,
      ledger: deps.ledger,
      workspace,
      sandbox,
      forge,
      ...(agent ? { agent } : {}),
      logger: log,
      configLimits: configured,
      ...(human ? { humanLimits: human } : {}),
      gate: config.gate,
      setup: config.setup,
      setupNetwork: config.network === 'setup',
      priority: goal.priority,
      // A pause or stop recorded while the goal waited for a worker is the human's newest word.
      honorPendingControl: true,
      ...(deps.abandon ? { abandon: deps.abandon } : {}),
      ...(deps.fence ? { fence: deps.fence } : {}),
      ...(deps.controlPollMs !== undefined ? { controlPollMs: deps.controlPollMs } : {}),
    });
  } finally {
    await agent?.close?.(); // stops the goal's MCP servers
  }
  // The goal rests: its clone goes (the branch on GitHub is the truth; the mirror stays warm).
  if (result.status !== 'PAUSED') await releaseGoalWorkspace(deps, g).catch((err: unknown) => log.warn({ err }, 'cannot remove the goal workspace'));
  await answerReviews(octokit, deps.ledger, key, g, result.checkpoints);
  log.info({ status: result.status, stop_reason: result.stop_reason }, 'goal run ended');
}

function makeWorkspace(deps: WorkGoalDeps, octokit: Octokit, g: GitHubGoal, goalId: string, config: RepoConfig): GitWorkspace {
  const tokenConfig = async () => {
    const auth = (await octokit.auth({ type: 'installation' })) as { token: string };
    return tokenHeaderConfig(g.cloneUrl, auth.token);
  };
  return new GitWorkspace({
    remote: g.cloneUrl,
    dir: goalWorkspaceDir(deps.workspaceRoot, g),
    goalId,
    branch: g.branch,
    baseBranch: g.defaultBranch,
    protectedPaths: config.protected_paths,
    identity: deps.identity ?? { name: 'goal-loop[bot]', email: 'goal-loop[bot]@users.noreply.github.com' },
    remoteConfig: tokenConfig,
    ...(deps.mirrorCache ? { mirrorCache: deps.mirrorCache } : {}),
  });
}

function goalWorkspaceDir(root: string, g: GitHubGoal): string {
  return join(root, `${g.owner}-${g.repo}`.replace(/[^A-Za-z0-9._-]/g, '_'), String(g.issueNumber));
}

/**
 * Deletes a goal's workspace once the goal is at rest (COMPLETE, ESCALATED, STOPPED), and lets
 * its mirror be evicted. For the worker to call, outside a run of that goal.
 */
export async function releaseGoalWorkspace(deps: Pick<WorkGoalDeps, 'workspaceRoot' | 'mirrorCache'>, g: GitHubGoal): Promise<void> {
  await releaseWorkspace({ dir: goalWorkspaceDir(deps.workspaceRoot, g), remote: g.cloneUrl, ...(deps.mirrorCache ? { mirrorCache: deps.mirrorCache } : {}) });
}

function extractsBlock(body: string | null | undefined): boolean {
  return extractGoalBlock(body ?? '') !== undefined;
}

/** A maintainer's `/goal budget`: it may raise what the issue's spec may only lower. */
function humanLimits(goal: GoalRecord): LimitsOverride | undefined {
  return typeof goal.meta.budgetUsd === 'number' ? { cost_cap_usd: goal.meta.budgetUsd } : undefined;
}

interface PendingReview {
  taskId: string;
  prNumber: number;
  reviewId: number;
}

/** Replies to each review whose fix task is now checkpointed. */
async function answerReviews(o: Octokit, ledger: Ledger, key: GoalKey, g: GitHubGoal, checkpoints: Array<{ task_id: string; sha: string }>): Promise<void> {
  const goal = await ledger.getGoal(key);
  const pending = (goal?.meta.pendingReviews as PendingReview[] | undefined) ?? [];
  if (pending.length === 0) return;
  const done = new Map(checkpoints.map((c) => [c.task_id, c.sha]));
  const left: PendingReview[] = [];
  for (const p of pending) {
    const sha = done.get(p.taskId);
    if (!sha) {
      left.push(p);
      continue;
    }
    await o.rest.issues.createComment({
      owner: g.owner,
      repo: g.repo,
      issue_number: p.prNumber,
      body: `Addressed review ${g.htmlUrl}/pull/${p.prNumber}#pullrequestreview-${p.reviewId} in ${sha.slice(0, 7)} (task \`${p.taskId}\`, verified).`,
    });
  }
  await ledger.setMeta(key, { pendingReviews: left });
}

/** A snapshot from the ledger alone, for status comments outside a running loop. */
export async function snapshotFromLedger(ledger: Ledger, key: GoalKey, g: GitHubGoal, configured: Partial<LoopLimits> = {}): Promise<GoalSnapshot> {
  const goal = (await ledger.getGoal(key))!;
  const tasks = await ledger.listTasks(key);
  const specTasks = new Map((goal.spec.tasks ?? []).map((t) => [t.id, t]));
  return {
    goalId: key.goalId,
    objective: goal.objective,
    repo: key.repo,
    branch: g.branch,
    state: goal.state,
    ...(goal.stopReason ? { stopReason: goal.stopReason } : {}),
    tasks: tasks.map((t) => ({
      id: t.taskId,
      title: t.title,
      dependencies: specTasks.get(t.taskId)?.dependencies ?? [],
      status: t.status,
      attempts: t.attempts,
      ...(t.checkpointSha ? { checkpointSha: t.checkpointSha } : {}),
    })),
    iterations: goal.counters.iterations,
    tokens: goal.counters.tokens,
    costUsd: goal.counters.cost_usd,
    limits: effectiveLimits(configured, goal.spec.limits, humanLimits(goal)),
    startedAt: Date.parse(goal.createdAt),
  };
}
