/** The Claude agent and planner: the public API of `src/agent`. */

export { type AnthropicModelOptions, createAnthropicModel, DEFAULT_MODEL, DEFAULT_RETRY, MissingApiKeyError, type RetryPolicy, resolveModelId } from './anthropic-model.js';
export { CostGuard, MIN_OUTPUT_TOKENS, promptTokenBound } from './budget.js';
export { type ClaudeAgentOptions, createClaudeAgent, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS } from './claude-agent.js';
export { DEFAULT_WINDOW, historyProblems, type WindowOptions } from './context.js';
export { type Model, ModelError, type ModelRequest, type ModelResponse } from './model.js';
export { canonicalModelId, MODEL_PROVIDERS, type ModelProvider, missingModelMessage, modelConfigured, modelProvider } from './model-provider.js';
export { checkSpec, type PlanGoalOptions, PlannerError, type PlanResult, planGoal, SUBMIT_TOOL } from './planner.js';
export { costUsd, type ModelPricing, PRICE_TABLE, pricingFor, type Rates, worstCaseCostUsd } from './pricing.js';
export { type RepoScan, renderScan, scanRepository } from './repo-scan.js';
export { type AgentChoice, type AgentDeps, checkAgentChoice, selectAgent, wantsClaude } from './select-agent.js';
export { TOOL_ALIASES, TOOL_NAMES, type ToolName, toolsForTask } from './tools.js';
