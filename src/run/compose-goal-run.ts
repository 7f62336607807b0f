import type { Logger } from 'pino';
import type { AgentDeps } from '../agent/select-agent.js';
import { childLogger } from '../common/child-logger.js';
import { configLimits, type RepoConfig } from '../config/repo-config.js';
import { effectiveLimits, ignoredSpecLimits, type LoopLimits } from '../goal/limits.js';
import type { GoalSpec, LimitsOverride } from '../goal/schema.js';
import { unpassedProxyNames } from '../goal/setup-hint.js';
import { verificationFlags } from '../goal/verification-lint.js';
import { verificationPolicy } from '../goal/verification-policy.js';
import type { RunGoalOptions } from '../loop/controller.js';
import type { TaskAgent } from '../ports/agent.js';
import type { Sandbox } from '../ports/sandbox.js';
import type { Workspace } from '../ports/workspace.js';
import { hostEnv } from '../sandbox/host-env.js';
import { selectSandbox } from '../sandbox/select-sandbox.js';
import type { GitOptions } from '../workspace/git.js';
import { GitWorkspace } from '../workspace/git-workspace.js';
import type { MirrorCache } from '../workspace/mirror-cache.js';
import type { PackageStores } from '../workspace/package-stores.js';
import type { SetupCache } from '../workspace/setup-cache.js';

/**
 * One composition of a goal run, shared by `goal-loop run`, the MCP server, the GitHub App and the
 * benchmarks (through runConfiguredGoal): from the repo config and the spec it derives the sandbox,
 * the agent, the goal's clone, the gate, the setup and the limits; the caller brings only what
 * differs (where the clone comes from and how it authenticates, which agent, the forge, the
 * ledger, how the run is stopped).
 */

/** Author and committer of checkpoints made on a local run (CLI, MCP). */
export const LOCAL_IDENTITY: Readonly<{ name: string; email: string }> = Object.freeze({ name: 'goal-loop', email: 'goal-loop@users.noreply.github.com' });

/** Where a goal's private clone comes from and lives. */
export interface GoalClone {
  /** Path or URL of the repository: clone source and push target. */
  remote: string;
  /** Credentials for the remote's git processes (split off a URL, or a token header). */
  remoteConfig?: GitOptions['remoteConfig'];
  /** The clone's directory. */
  dir: string;
  /** The branch that receives the checkpoints; default `goal/<goal_id>`. */
  branch?: string;
  /** Branch to start from when the goal branch does not exist yet; default: the remote's HEAD. */
  baseBranch?: string;
  /** Author and committer of checkpoints; default LOCAL_IDENTITY. */
  identity?: { name: string; email: string };
  /** Clone from a local mirror of the remote instead of downloading it again. */
  mirrorCache?: MirrorCache;
  /** No mirror (a local path): the cache whose parked trees a new clone reuses (see GitWorkspaceOptions.parkCache). */
  parkCache?: MirrorCache;
  /** Put back what the same setup produced before on this repository (see SetupCache.fromEnv). */
  setupCache?: SetupCache;
  /** Package managers' stores per repository, bound into setup (see PackageStores.fromEnv). */
  packageStores?: PackageStores;
}

/** The goal's clone, with the repo config's protected paths. */
export function goalWorkspace(clone: GoalClone, goalId: string, config: Pick<RepoConfig, 'protected_paths'> & Partial<Pick<RepoConfig, 'setup_inputs'>>): GitWorkspace {
  return new GitWorkspace({
    remote: clone.remote,
    ...(clone.remoteConfig ? { remoteConfig: clone.remoteConfig } : {}),
    dir: clone.dir,
    goalId,
    branch: clone.branch ?? `goal/${goalId}`,
    ...(clone.baseBranch ? { baseBranch: clone.baseBranch } : {}),
    protectedPaths: config.protected_paths,
    identity: clone.identity ?? LOCAL_IDENTITY,
    ...(clone.mirrorCache ? { mirrorCache: clone.mirrorCache } : {}),
    ...(clone.parkCache ? { parkCache: clone.parkCache } : {}),
    ...(clone.setupCache ? { setupCache: clone.setupCache, setupInputs: config.setup_inputs ?? [] } : {}),
    ...(clone.packageStores ? { packageStores: clone.packageStores } : {}),
  });
}

/** What an agent factory gets: the run's sandbox, the repo config and the limits in force. */
export interface AgentContext {
  sandbox: Sandbox;
  config: RepoConfig;
  limits: LoopLimits;
  logger: Logger;
}

/** The Claude agent's dependencies for a run (for `selectAgent`). */
export function agentDeps(ctx: AgentContext): AgentDeps {
  return {
    sandbox: ctx.sandbox,
    logger: ctx.logger,
    ...(ctx.config.model ? { model: ctx.config.model } : {}),
    protectedPaths: ctx.config.protected_paths,
    taskTimeoutS: ctx.limits.task_timeout_s,
    maxTurns: ctx.limits.max_turns,
    mcpServers: ctx.config.mcp_servers,
    maxWallMinutes: ctx.limits.max_wall_minutes,
  };
}

/** The limits in force for a run, and the spec it runs. */
export interface RunLimits {
  /** Repo config, tightened by the spec, then the human's changes (effectiveLimits). */
  limits: LoopLimits;
  /** The spec to run (with the limits in force written into it when pinned). */
  spec: GoalSpec;
}

/**
 * The limits of a run, computed once for it; a spec that tries to loosen the config is warned
 * about. Pinned (the MCP server), the limits in force are written into the spec, so the ledger's
 * copy of it shows them to `status`.
 */
export function runLimits(config: RepoConfig, spec: GoalSpec, human?: LimitsOverride, o: { pin?: boolean; logger?: Logger } = {}): RunLimits {
  const configured = configLimits(config);
  const limits = effectiveLimits(configured, spec.limits, human);
  const ignored = ignoredSpecLimits(configured, spec.limits, human);
  if (ignored.length > 0) (o.logger && childLogger(o.logger, { goal: spec.goal_id }))?.warn({ ignored }, `the goal spec's limits may only tighten the repo config; ignored: ${ignored.join(', ')}`);
  return { limits, spec: o.pin ? { ...spec, limits: { ...limits } } : spec };
}

/**
 * The repo config's commands for a run: the gate, the setup, whether setup gets the network, and
 * the host variables it names for setup (never the bot's own: those are refused, and logged).
 */
export function configCommands(
  config: Pick<RepoConfig, 'gate' | 'setup' | 'network'> & Partial<Pick<RepoConfig, 'setup_env'>>,
  host: NodeJS.ProcessEnv = process.env,
  logger?: Logger,
): Pick<RunGoalOptions, 'gate' | 'setup' | 'setupNetwork' | 'setupEnv'> {
  const env = hostEnv(config.setup_env ?? [], host);
  if (env.refused.length > 0)
    logger?.warn({ refused: env.refused, why: env.why }, "setup_env names refused: the bot's own credentials and settings, and secret-looking names, never enter the sandbox");
  if (env.missing.length > 0 && config.setup.length > 0) logger?.warn({ missing: env.missing }, 'setup_env names not set on the host');
  return { gate: config.gate, setup: config.setup, setupNetwork: config.network === 'setup', setupEnv: env.env };
}

/** Setup's own timeout and stall bound, and the proxy variables the host has that setup does not get (for its failure hint). */
export function setupOptions(
  config: Pick<RepoConfig, 'setup_env' | 'setup_stall_s'> & Partial<Pick<RepoConfig, 'setup_timeout_s'>>,
  host: NodeJS.ProcessEnv = process.env,
): RunGoalOptions['setupOptions'] {
  return {
    ...(config.setup_timeout_s !== undefined ? { timeoutS: config.setup_timeout_s } : {}),
    stallS: config.setup_stall_s,
    unpassedHostNames: unpassedProxyNames(host, config.setup_env),
  };
}

/** The sandbox the repo config asks for (`bwrap` is refused with SandboxUnavailableError where it cannot run). */
export function sandboxForConfig(logger: Logger): (config: RepoConfig) => Promise<Sandbox> {
  return (config) => selectSandbox({ mode: config.sandbox, logger });
}

export interface ComposeGoalRunInput extends Omit<RunGoalOptions, 'spec' | 'workspace' | 'sandbox' | 'agent' | 'limits' | 'gate' | 'setup' | 'setupNetwork' | 'setupEnv' | 'setupOptions'> {
  spec: GoalSpec;
  config: RepoConfig;
  /** The goal's clone: where and how, or a workspace the caller already made (e.g. with goalWorkspace, to plan in it first). */
  workspace: GoalClone | Workspace;
  /** The sandbox, or how to get it from the config (default: sandboxForConfig). Rejects with SandboxUnavailableError. */
  sandbox?: Sandbox | ((config: RepoConfig) => Promise<Sandbox>);
  /** The agent, or a factory given the run's sandbox, config and limits (undefined: the tasks' scripted steps only). */
  agent?: TaskAgent | ((ctx: AgentContext) => TaskAgent | undefined);
  /** A human's changes (`/goal budget`, an MCP client's `goal_config`): applied as given. */
  humanLimits?: LimitsOverride;
  /** Write the limits in force into the spec (see runLimits). */
  pinLimits?: boolean;
}

export interface ComposedGoalRun {
  /** For runGoal. */
  options: RunGoalOptions;
  limits: LoopLimits;
  sandbox: Sandbox;
  agent: TaskAgent | undefined;
  /** Stops what this composition started (an agent made by the factory: its MCP servers). */
  close(): Promise<void>;
}

/**
 * Composes a goal run from the repo config and the spec. Callers use runConfiguredGoal, which runs
 * it and always closes it; this half is its own for the tests that look at what it derives.
 */
export async function composeGoalRun(input: ComposeGoalRunInput): Promise<ComposedGoalRun> {
  const { config, workspace: workspaceInput, sandbox: sandboxInput, agent: agentInput, humanLimits, pinLimits, spec: givenSpec, ...pass } = input;
  const { limits, spec } = runLimits(config, givenSpec, humanLimits, { pin: pinLimits === true, logger: input.logger });
  const sandbox = typeof sandboxInput === 'function' || sandboxInput === undefined ? await (sandboxInput ?? sandboxForConfig(input.logger))(config) : sandboxInput;
  const workspace = isWorkspace(workspaceInput) ? workspaceInput : goalWorkspace(workspaceInput, spec.goal_id, config);
  const commands = configCommands(config, process.env, input.logger);
  const flags = verificationFlags(spec);
  if (flags.length > 0) childLogger(input.logger, { goal: spec.goal_id }).warn({ flags }, 'verifications that cannot fail: they prove nothing about their tasks');
  // Last, so nothing that can fail comes between making the agent and handing back its close().
  const made = typeof agentInput === 'function';
  const agent = typeof agentInput === 'function' ? agentInput({ sandbox, config, limits, logger: input.logger }) : agentInput;
  const options: RunGoalOptions = {
    ...pass,
    spec,
    workspace,
    sandbox,
    ...(agent ? { agent } : {}),
    limits,
    ...commands,
    setupOptions: setupOptions(config),
    onEscalation: config.on_escalation,
    verification: verificationPolicy(config, spec),
  };
  const ownSandbox = typeof sandboxInput === 'function' || sandboxInput === undefined;
  const close = async () => {
    try {
      if (made) await agent?.close?.();
    } finally {
      // A sandbox made here is this run's: the jails it started ahead end with it.
      if (ownSandbox) await sandbox.dispose?.();
    }
  };
  return { options, limits, sandbox, agent, close };
}

function isWorkspace(w: GoalClone | Workspace): w is Workspace {
  return typeof (w as Workspace).prepare === 'function';
}
