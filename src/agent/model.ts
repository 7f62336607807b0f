import type { Usage } from '../goal/usage.js';
import type { ModelPricing } from './pricing.js';

/**
 * The model port: one Messages-API-shaped request in, one assistant message out. The Claude
 * agent and the planner talk only to this; `anthropic-model.ts` is the real adapter, tests and
 * the context benchmark plug in their own.
 */
export interface Model {
  /** The model id sent with every request, e.g. `claude-sonnet-5-5`. */
  readonly id: string;
  /** Prices of this model, for the cost of each request and the cost cap. */
  readonly pricing: ModelPricing;
  /** Whether the model accepts a forced `tool_choice` (`{type: 'tool'}`); newer models refuse it. */
  readonly forcedToolChoice: boolean;
  /** Throws `ModelError` when the request fails for good (after any retries). */
  complete(request: ModelRequest): Promise<ModelResponse>;
}

export interface CacheControl {
  type: 'ephemeral';
}

export interface TextBlock {
  type: 'text';
  text: string;
  cache_control?: CacheControl;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export interface RedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
  cache_control?: CacheControl;
}

/** What an assistant message may hold (we enable no server tools, so nothing else comes back). */
export type AssistantBlock = TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock;
export type UserBlock = TextBlock | ToolResultBlock;

export type Message = { role: 'user'; content: UserBlock[] } | { role: 'assistant'; content: AssistantBlock[] };

export interface ToolDefinition {
  name: string;
  description: string;
  input_schema: { type: 'object'; [key: string]: unknown };
  cache_control?: CacheControl;
}

export type ToolChoice = { type: 'auto' } | { type: 'any' } | { type: 'tool'; name: string };

export interface ModelRequest {
  system: TextBlock[];
  tools: ToolDefinition[];
  messages: Message[];
  maxTokens: number;
  toolChoice?: ToolChoice;
  signal?: AbortSignal;
}

export interface ModelResponse {
  /** The model that answered (as the API reports it). */
  model: string;
  content: AssistantBlock[];
  /** `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`, … */
  stopReason: string | null;
  usage: Usage;
}

/**
 * A request that failed for good. `retryable` failures (rate limits, overload, 5xx, network)
 * were already retried by the adapter's bounded policy; the agent reports every ModelError as an
 * infrastructure error, which the loop's circuit breaker counts.
 */
export class ModelError extends Error {
  override name = 'ModelError';
  constructor(
    message: string,
    readonly details: { status?: number; retryable: boolean; aborted?: boolean; attempts: number; requestId?: string; errorCode?: string },
  ) {
    super(message);
  }

  get status(): number | undefined {
    return this.details.status;
  }

  get aborted(): boolean {
    return this.details.aborted === true;
  }
}

export { addUsage, NO_USAGE } from '../goal/usage.js';
