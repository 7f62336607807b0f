import type { Logger } from 'pino';
import { createAnthropicModel, modelConfigured, planGoal, selectAgent } from '../agent/index.js';
import { sanitizeUntrusted } from '../common/untrusted.js';
import { configLimits } from '../config/repo-config.js';
import { resolveLimits } from '../goal/limits.js';
import { agentDeps } from '../run/compose-goal-run.js';
import type { WorkGoalDeps } from './work-goal.js';

/**
 * The Claude agent and planner for the GitHub App, when a model is configured (Anthropic's API,
 * Bedrock or Vertex: GOAL_LOOP_PROVIDER); else nothing. A provider chosen without its settings
 * is a usage error, raised at startup.
 */
export function claudeHooks(env: NodeJS.ProcessEnv, logger: Logger): Pick<WorkGoalDeps, 'agentFor' | 'planner'> {
  if (!modelConfigured(env)) return {};
  return {
    // The same agent as the command line's, for the limits in force (the spec may tighten them).
    agentFor: (ctx) => selectAgent('auto', agentDeps(ctx), env),
    planner: async ({ objective, repoDir, goalId, config }) => {
      const result = await planGoal({
        model: createAnthropicModel({ ...(config.model ? { model: config.model } : {}), env, logger }),
        objective: sanitizeUntrusted(objective),
        repoDir,
        goalId,
        budgetUsd: resolveLimits(configLimits(config)).cost_cap_usd,
        logger,
      });
      return { spec: result.spec, usage: result.usage, costUsd: result.costUsd };
    },
  };
}
