import { UsageError } from '../common/errors.js';

/**
 * Where Claude is reached: Anthropic's API, Amazon Bedrock or Google Vertex AI, each through
 * Anthropic's own SDK for it. One place decides it from the environment, so the App, the Action,
 * `run` and `plan` agree on whether a model is configured.
 */
export type ModelProvider = 'anthropic' | 'bedrock' | 'vertex';

export const MODEL_PROVIDERS: readonly ModelProvider[] = ['anthropic', 'bedrock', 'vertex'];

/** What each provider needs in the environment (credentials aside, which its SDK finds itself). */
export type ProviderSettings =
  | { provider: 'anthropic'; apiKey: string; baseURL?: string }
  | { provider: 'bedrock'; awsRegion: string; baseURL?: string }
  | { provider: 'vertex'; projectId: string; region: string; baseURL?: string };

/** A setting's value, blank as unset. Each setting is read by its own name off `env`, so the README env table check sees it. */
const set = (value: string | undefined): string | undefined => value?.trim() || undefined;

/** GOAL_LOOP_PROVIDER, `anthropic` when unset; an unknown value is a usage error, not a silent default. */
export function modelProvider(env: NodeJS.ProcessEnv = process.env): ModelProvider {
  const raw = set(env.GOAL_LOOP_PROVIDER)?.toLowerCase() ?? 'anthropic';
  if (!(MODEL_PROVIDERS as readonly string[]).includes(raw)) {
    throw new UsageError(`GOAL_LOOP_PROVIDER must be one of ${MODEL_PROVIDERS.join(', ')} (got ${JSON.stringify(raw.slice(0, 40))})`);
  }
  return raw as ModelProvider;
}

/** The settings the chosen provider lacks, by name (empty when it can be reached). */
export function missingModelSettings(env: NodeJS.ProcessEnv = process.env): string[] {
  const provider = modelProvider(env);
  const needs: Record<string, string | undefined> =
    provider === 'bedrock'
      ? { AWS_REGION: env.AWS_REGION }
      : provider === 'vertex'
        ? { ANTHROPIC_VERTEX_PROJECT_ID: env.ANTHROPIC_VERTEX_PROJECT_ID, CLOUD_ML_REGION: env.CLOUD_ML_REGION }
        : { ANTHROPIC_API_KEY: env.ANTHROPIC_API_KEY };
  return Object.entries(needs)
    .filter(([, v]) => !set(v))
    .map(([name]) => name);
}

/** What to tell a user whose provider lacks settings, or undefined when none is missing. */
export function missingModelMessage(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const missing = missingModelSettings(env);
  if (missing.length === 0) return undefined;
  const provider = modelProvider(env);
  const names = missing.join(' and ');
  if (provider === 'anthropic') return `${names} is not set: the Claude agent and planner need it (or GOAL_LOOP_PROVIDER=bedrock|vertex)`;
  return `GOAL_LOOP_PROVIDER=${provider} needs ${names} in the environment`;
}

/**
 * Whether the Claude agent and planner can run here: Anthropic with ANTHROPIC_API_KEY, Bedrock
 * with AWS_REGION, Vertex with ANTHROPIC_VERTEX_PROJECT_ID and CLOUD_ML_REGION. A provider chosen
 * explicitly but incomplete is a usage error: falling back to no model would hide the mistake.
 */
export function modelConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  const message = missingModelMessage(env);
  if (!message) return true;
  if (modelProvider(env) === 'anthropic') return false;
  throw new UsageError(message);
}

/** The provider's settings, or a usage error that names what is missing. */
export function providerSettings(env: NodeJS.ProcessEnv = process.env): ProviderSettings {
  const message = missingModelMessage(env);
  if (message) throw new UsageError(message);
  const provider = modelProvider(env);
  if (provider === 'bedrock') {
    const baseURL = set(env.ANTHROPIC_BEDROCK_BASE_URL);
    return { provider, awsRegion: set(env.AWS_REGION)!, ...(baseURL ? { baseURL } : {}) };
  }
  if (provider === 'vertex') {
    const baseURL = set(env.ANTHROPIC_VERTEX_BASE_URL);
    return { provider, projectId: set(env.ANTHROPIC_VERTEX_PROJECT_ID)!, region: set(env.CLOUD_ML_REGION)!, ...(baseURL ? { baseURL } : {}) };
  }
  const baseURL = set(env.ANTHROPIC_BASE_URL);
  return { provider, apiKey: set(env.ANTHROPIC_API_KEY)!, ...(baseURL ? { baseURL } : {}) };
}

/**
 * The id a provider's model is priced and described by: Bedrock's `anthropic.` prefix (and its
 * cross-region `us.`/`eu.`/`global.` one) dropped; Vertex's `@date` the price table already reads.
 */
export function canonicalModelId(id: string): string {
  return id.replace(/^(?:[a-z]{2,6}\.)?anthropic\./i, '');
}
