import Anthropic from '@anthropic-ai/sdk';
import { errorMessage } from '../common/errors.js';
import type { ProviderSettings } from './model-provider.js';

/** What the model adapter asks of a client: the Messages API, which all three SDKs serve alike. */
export interface MessagesClient {
  messages: Pick<Anthropic['messages'], 'create'>;
}

export interface ClientOptions {
  timeoutMs: number;
  /** Where AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and AWS_BEARER_TOKEN_BEDROCK are read. */
  env: NodeJS.ProcessEnv;
}

/** The SDK client of Anthropic's API: built at once, as before providers were a setting. */
export function anthropicClient(settings: Extract<ProviderSettings, { provider: 'anthropic' }>, opts: ClientOptions): MessagesClient {
  return new Anthropic({
    apiKey: settings.apiKey,
    ...(settings.baseURL ? { baseURL: settings.baseURL } : {}),
    timeout: opts.timeoutMs,
    maxRetries: 0, // the retries are ours (RetryPolicy), not stacked on the SDK's
  });
}

/**
 * The client of Bedrock or Vertex, from Anthropic's SDK for it, loaded only when chosen: the App
 * and the CLI never load the AWS or Google libraries otherwise. A failure here (no Google
 * credentials) is a setup error, raised before the first request.
 */
export async function cloudClient(settings: Exclude<ProviderSettings, { provider: 'anthropic' }>, opts: ClientOptions): Promise<MessagesClient> {
  const common = { ...(settings.baseURL ? { baseURL: settings.baseURL } : {}), timeout: opts.timeoutMs, maxRetries: 0 };
  if (settings.provider === 'bedrock') {
    const { AnthropicBedrock } = await import('@anthropic-ai/bedrock-sdk');
    const env = opts.env;
    const accessKey = env.AWS_ACCESS_KEY_ID?.trim();
    const secretKey = env.AWS_SECRET_ACCESS_KEY?.trim();
    const sessionToken = env.AWS_SESSION_TOKEN?.trim();
    // Static keys from the given environment when it has both, else the AWS chain (profile,
    // web identity, container or instance role). `apiKey: null` keeps the SDK from reading a
    // Bedrock API key from process.env behind the given environment's back.
    const staticKeys = accessKey && secretKey ? { awsAccessKey: accessKey, awsSecretKey: secretKey, ...(sessionToken ? { awsSessionToken: sessionToken } : {}) } : {};
    return new AnthropicBedrock({ ...common, awsRegion: settings.awsRegion, apiKey: env.AWS_BEARER_TOKEN_BEDROCK?.trim() || null, ...staticKeys });
  }
  const { AnthropicVertex } = await import('@anthropic-ai/vertex-sdk');
  const client = new AnthropicVertex({ ...common, projectId: settings.projectId, region: settings.region });
  await googleCredentials(client);
  return client;
}

/**
 * The Vertex SDK starts looking for Google's Application Default Credentials as it is built,
 * and leaves that promise unobserved until the first request: with no credentials, the process
 * would die of an unhandled rejection. Awaiting it here turns that into a clear setup error.
 */
async function googleCredentials(client: object): Promise<void> {
  const pending = (client as { _authClientPromise?: unknown })._authClientPromise;
  if (!(pending instanceof Promise)) return;
  try {
    await pending;
  } catch (err) {
    throw new Error(
      `GOAL_LOOP_PROVIDER=vertex found no Google credentials (Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, e.g. set by google-github-actions/auth): ${errorMessage(err)}`,
    );
  }
}
