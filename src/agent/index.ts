/** The Claude agent and planner: the public API of `src/agent`. */
export { createClaudeAgent, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, type ClaudeAgentOptions } from './claude-agent.js';
export { planGoal, checkSpec, PlannerError, SUBMIT_TOOL, type PlanGoalOptions, type PlanResult } from './planner.js';
export { scanRepository, renderScan, type RepoScan } from './repo-scan.js';
export { createAnthropicModel, resolveModelId, DEFAULT_MODEL, DEFAULT_RETRY, MissingApiKeyError, type AnthropicModelOptions, type RetryPolicy } from './anthropic-model.js';
export { ModelError, type Model, type ModelRequest, type ModelResponse } from './model.js';
export { PRICE_TABLE, pricingFor, costUsd, worstCaseCostUsd, type ModelPricing, type Rates } from './pricing.js';
export { CostGuard, promptTokenBound, MIN_OUTPUT_TOKENS } from './budget.js';
export { selectAgent, checkAgentChoice, wantsClaude, type AgentChoice, type AgentDeps } from './select-agent.js';
export { TOOL_NAMES, TOOL_ALIASES, toolsForTask, type ToolName } from './tools.js';
export { DEFAULT_WINDOW, historyProblems, type WindowOptions } from './context.js';
