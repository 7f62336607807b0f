import type { Logger } from 'pino';
import { UsageError } from '../common/errors.js';
import type { McpServerConfig } from '../config/repo-config.js';
import type { TaskAgent } from '../ports/agent.js';
import type { Sandbox } from '../ports/sandbox.js';
import { createAnthropicModel } from './anthropic-model.js';
import { type ClaudeAgentOptions, createClaudeAgent } from './claude-agent.js';
import { McpToolHub } from './mcp/tool-hub.js';
import { missingModelMessage, modelConfigured, modelProvider } from './model-provider.js';

export type AgentChoice = 'auto' | 'scripted' | 'claude';

/** What the Claude agent needs from the run: the sandbox, and the repo config's settings. */
export interface AgentDeps {
  sandbox: Sandbox;
  logger: Logger;
  /** The repo config's `model` (else GOAL_LOOP_MODEL, else a current Sonnet). */
  model?: string;
  /** The repo config's `protected_paths`. */
  protectedPaths?: readonly string[];
  /** The repo config's `task_timeout_s` (a goal spec's `limits` override it per goal). */
  taskTimeoutS?: number;
  /** Where the agent's scratchpad logs go (default `<workspace>.logs/agent`). */
  scratchDir?: string;
  /** The repo config's `mcp_servers`: started in the sandbox for the goal, their tools offered to the agent. */
  mcpServers?: readonly McpServerConfig[];
  /** The limits' max_turns: model requests per attempt (the spec's `limits` may only lower it further). */
  maxTurns?: number;
  /** Upper bound on an MCP server's life, in minutes (the goal's max_wall_minutes). */
  maxWallMinutes?: number;
  /** Further agent options (turn limit, window sizes…). */
  agent?: Partial<Omit<ClaudeAgentOptions, 'model' | 'sandbox'>>;
}

/** Whether this choice runs the Claude agent in this environment. */
export function wantsClaude(choice: AgentChoice, env: NodeJS.ProcessEnv = process.env): boolean {
  return choice === 'claude' || (choice === 'auto' && modelConfigured(env));
}

/**
 * Checks the choice can be honoured before any work starts: `claude` needs a model
 * (ANTHROPIC_API_KEY, or GOAL_LOOP_PROVIDER=bedrock|vertex with its settings); `auto` with a
 * provider chosen but incomplete is refused too rather than quietly run without a model.
 */
export function checkAgentChoice(choice: AgentChoice, env: NodeJS.ProcessEnv = process.env): void {
  if (choice === 'scripted') return;
  const missing = missingModelMessage(env);
  if (choice === 'claude' && missing) {
    if (modelProvider(env) === 'anthropic') {
      throw new UsageError('--agent claude needs ANTHROPIC_API_KEY in the environment (ANTHROPIC_BASE_URL and GOAL_LOOP_MODEL are optional)');
    }
    throw new UsageError(`--agent claude: ${missing} (GOAL_LOOP_MODEL is optional)`);
  }
  modelConfigured(env);
}

/**
 * `scripted`: only the tasks' deterministic `run` steps (no agent). `claude`: the Claude agent.
 * `auto`: Claude when a model is configured (see modelConfigured), else scripted.
 */
export function selectAgent(choice: AgentChoice, deps?: AgentDeps, env: NodeJS.ProcessEnv = process.env): TaskAgent | undefined {
  checkAgentChoice(choice, env);
  if (!wantsClaude(choice, env)) return undefined;
  if (!deps) throw new UsageError("the Claude agent needs the run's sandbox: call selectAgent with its dependencies");
  const model = createAnthropicModel({ ...(deps.model ? { model: deps.model } : {}), env, logger: deps.logger });
  return createClaudeAgent({
    ...deps.agent,
    model,
    sandbox: deps.sandbox,
    logger: deps.logger,
    ...(deps.protectedPaths ? { protectedPaths: deps.protectedPaths } : {}),
    ...(deps.taskTimeoutS ? { taskTimeoutS: deps.taskTimeoutS } : {}),
    ...(deps.maxTurns ? { maxTurns: deps.maxTurns } : {}),
    ...(deps.scratchDir ? { scratchDir: deps.scratchDir } : {}),
    ...(deps.mcpServers?.length
      ? { mcp: new McpToolHub(deps.mcpServers, { sandbox: deps.sandbox, logger: deps.logger, hostEnv: env, ...(deps.maxWallMinutes ? { lifetimeMs: deps.maxWallMinutes * 60_000 } : {}) }) }
      : {}),
  });
}
