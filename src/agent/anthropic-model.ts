import type Anthropic from '@anthropic-ai/sdk';
import { APIConnectionError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import type { Logger } from 'pino';
import { errorMessage } from '../common/errors.js';
import { redactUrls } from '../common/redact-urls.js';
import { type AssistantBlock, type Model, ModelError, type ModelRequest, type ModelResponse } from './model.js';
import { canonicalModelId, type ModelProvider, missingModelSettings, modelProvider, providerSettings } from './model-provider.js';
import { type ModelPricing, pricingFor } from './pricing.js';
import { anthropicClient, cloudClient, type MessagesClient } from './provider-client.js';

/** The model used when neither the repo config `model` nor GOAL_LOOP_MODEL names one. */
export const DEFAULT_MODEL = 'claude-sonnet-5-5';

/**
 * Models that answer a forced `tool_choice` (`any` or a named tool) with a 400: on these the
 * planner offers its one tool with `tool_choice: auto` and insists in the prompt instead.
 */
const NO_FORCED_TOOL_CHOICE = ['claude-sonnet-5-5', 'claude-opus-5-5', 'claude-haiku-5-5', 'claude-fable-5-1', 'claude-fable-5-2', 'claude-mythos-5-1', 'claude-mythos-5-2'];

/**
 * The one retry policy of a model request. The SDK's own retries are off (maxRetries: 0): with
 * both, one request could become attempts × (SDK retries + 1) HTTP calls (12 by default before),
 * each wave with its own backoff, and only ours is bounded, logged, abortable between tries and
 * reported in the error (`attempts`).
 */
export interface RetryPolicy {
  /** HTTP calls made at most for one request, the first included. */
  attempts: number;
  /** First delay between those calls; doubled each time, with jitter, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({ attempts: 5, baseDelayMs: 2_000, maxDelayMs: 60_000 });

export interface AnthropicModelOptions {
  /** The repo config's `model`; else GOAL_LOOP_MODEL; else DEFAULT_MODEL. */
  model?: string;
  /**
   * Where GOAL_LOOP_PROVIDER, GOAL_LOOP_MODEL and the provider's settings are read (default
   * process.env): ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; AWS_REGION; ANTHROPIC_VERTEX_PROJECT_ID
   * and CLOUD_ML_REGION.
   */
  env?: NodeJS.ProcessEnv;
  /** Timeout of one HTTP request (default 10 minutes, the longest a non-streaming request may take). */
  timeoutMs?: number;
  /** The retries of rate limits (429), overload (529), 408, 409, 5xx and network failures. */
  retry?: Partial<RetryPolicy>;
  /** Overrides the price table (e.g. negotiated prices). */
  pricing?: ModelPricing;
  logger?: Logger;
}

/** Which model: the config's `model`, else GOAL_LOOP_MODEL, else a current Sonnet. */
export function resolveModelId(configModel?: string, env: NodeJS.ProcessEnv = process.env): string {
  return configModel?.trim() || env.GOAL_LOOP_MODEL?.trim() || DEFAULT_MODEL;
}

export class MissingApiKeyError extends Error {
  override name = 'MissingApiKeyError';
  constructor() {
    super('ANTHROPIC_API_KEY is not set: the Claude agent and planner need it');
  }
}

/**
 * The Model port over Anthropic's SDKs: its API, Amazon Bedrock or Google Vertex AI
 * (GOAL_LOOP_PROVIDER). The model id is the provider's own (`anthropic.claude-…` on Bedrock,
 * `claude-…@date` on Vertex). Bedrock's and Vertex's SDKs are loaded on the first request.
 */
export function createAnthropicModel(opts: AnthropicModelOptions = {}): Model {
  const env = opts.env ?? process.env;
  if (modelProvider(env) === 'anthropic' && missingModelSettings(env).length > 0) throw new MissingApiKeyError();
  const settings = providerSettings(env);
  const clientOpts = { timeoutMs: opts.timeoutMs ?? 600_000, env };
  const client = settings.provider === 'anthropic' ? anthropicClient(settings, clientOpts) : lazily(() => cloudClient(settings, clientOpts));
  return new AnthropicModel(client, settings.provider, resolveModelId(opts.model, env), { ...DEFAULT_RETRY, ...opts.retry }, opts.pricing, opts.logger);
}

/** A client built on first use; its failure is observed at once (never an unhandled rejection) and reported on each request. */
function lazily(build: () => Promise<MessagesClient>): () => Promise<MessagesClient> {
  let pending: Promise<MessagesClient> | undefined;
  return () => {
    if (!pending) {
      pending = build();
      pending.catch(() => undefined);
    }
    return pending;
  };
}

class AnthropicModel implements Model {
  readonly pricing: ModelPricing;
  readonly forcedToolChoice: boolean;

  constructor(
    private readonly client: MessagesClient | (() => Promise<MessagesClient>),
    private readonly provider: ModelProvider,
    readonly id: string,
    private readonly retry: RetryPolicy,
    pricing: ModelPricing | undefined,
    private readonly logger: Logger | undefined,
  ) {
    const canonical = canonicalModelId(id);
    this.pricing = pricing ?? pricingFor(canonical);
    this.forcedToolChoice = !NO_FORCED_TOOL_CHOICE.some((m) => canonical === m || canonical.startsWith(`${m}-`) || canonical.startsWith(`${m}[`) || canonical.startsWith(`${m}@`));
    if (!this.pricing.known) {
      logger?.warn({ model: id }, 'model not in the price table: costs are counted at the most expensive known rates');
    }
  }

  async complete(request: ModelRequest): Promise<ModelResponse> {
    const params = {
      model: this.id,
      max_tokens: request.maxTokens,
      system: request.system,
      tools: request.tools,
      messages: request.messages,
      ...(request.toolChoice ? { tool_choice: request.toolChoice } : {}),
    } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const client = await this.ready();
    const attempts = Math.max(1, this.retry.attempts);
    for (let attempt = 1; ; attempt++) {
      try {
        const message = await client.messages.create(params, request.signal ? { signal: request.signal } : {});
        return toResponse(message);
      } catch (err) {
        const failure = withProviderHint(classify(err, attempt), this.provider, this.id);
        if (failure.details.aborted || !failure.details.retryable || attempt >= attempts) throw failure;
        const delay = retryDelay(err, attempt, this.retry);
        this.logger?.warn({ model: this.id, status: failure.status, attempt, delayMs: Math.round(delay) }, `model request failed, retrying: ${failure.message}`);
        try {
          await sleep(delay, request.signal);
        } catch {
          throw new ModelError('model request aborted', { retryable: false, aborted: true, attempts: attempt });
        }
      }
    }
  }

  /** The SDK client; a Bedrock or Vertex one that cannot be built fails the request, not the process. */
  private async ready(): Promise<MessagesClient> {
    if (typeof this.client !== 'function') return this.client;
    try {
      return await this.client();
    } catch (err) {
      throw new ModelError(redactUrls(`cannot set up the ${this.provider} client: ${errorMessage(err)}`), { retryable: false, attempts: 0 });
    }
  }
}

/**
 * A provider's answer to a model id it does not serve (Bedrock: 400 or 404, Vertex: 404) points
 * at the setting to change: each provider has ids of its own.
 */
function withProviderHint(failure: ModelError, provider: ModelProvider, id: string): ModelError {
  if (provider === 'anthropic') return failure;
  let message = redactUrls(failure.message);
  if (failure.status === 400 || failure.status === 404) {
    const example = provider === 'bedrock' ? "Bedrock's, e.g. anthropic.claude-sonnet-4-5-20250929-v1:0" : "Vertex's, e.g. claude-sonnet-4-5@20250929";
    message += ` (model ${JSON.stringify(id)} on GOAL_LOOP_PROVIDER=${provider}: is the id ${example}, and is the model enabled there? Set it with GOAL_LOOP_MODEL or the config's \`model\`)`;
  }
  return new ModelError(message, failure.details);
}

function toResponse(message: Anthropic.Message): ModelResponse {
  const content: AssistantBlock[] = [];
  for (const block of message.content) {
    if (block.type === 'text') content.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use') content.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
    else if (block.type === 'thinking') content.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
    else if (block.type === 'redacted_thinking') content.push({ type: 'redacted_thinking', data: block.data });
    // Server-tool blocks cannot appear: no server tools are offered.
  }
  const u = message.usage;
  return {
    model: message.model,
    content,
    stopReason: message.stop_reason ?? null,
    usage: {
      input: u.input_tokens ?? 0,
      output: u.output_tokens ?? 0,
      cache_read: u.cache_read_input_tokens ?? 0,
      cache_write: u.cache_creation_input_tokens ?? 0,
    },
  };
}

/** Rate limits, overload, server errors, timeouts and network failures are worth another try. */
function classify(err: unknown, attempts: number): ModelError {
  if (err instanceof APIUserAbortError) return new ModelError('model request aborted', { retryable: false, aborted: true, attempts });
  if (err instanceof APIConnectionError) return new ModelError(`cannot reach the model API: ${err.message}`, { retryable: true, attempts });
  if (err instanceof APIError) {
    const status = err.status;
    const retryable = status === undefined || status === 408 || status === 409 || status === 429 || status >= 500;
    const requestId = err.requestID ?? undefined;
    const errorCode = err.errorCode ?? undefined;
    const label = status === 529 ? 'overloaded' : status === 429 ? 'rate limited' : `HTTP ${status ?? '?'}`;
    return new ModelError(`model API error (${label}): ${err.message}`, {
      ...(status !== undefined ? { status } : {}),
      retryable,
      attempts,
      ...(requestId ? { requestId } : {}),
      ...(errorCode ? { errorCode } : {}),
    });
  }
  return new ModelError(`model request failed: ${err instanceof Error ? err.message : String(err)}`, { retryable: false, attempts });
}

/** Exponential backoff with jitter; a server's retry-after wins when it asks for longer (capped). */
function retryDelay(err: unknown, attempt: number, policy: RetryPolicy): number {
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.25);
  const headers = err instanceof APIError ? err.headers : undefined;
  const ms = Number(headers?.get('retry-after-ms'));
  const s = Number(headers?.get('retry-after'));
  const asked = Number.isFinite(ms) && ms > 0 ? ms : Number.isFinite(s) && s > 0 ? s * 1000 : 0;
  return Math.min(policy.maxDelayMs, Math.max(backoff, asked));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
