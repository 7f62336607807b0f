import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AnthropicBedrock } from '@anthropic-ai/bedrock-sdk';
import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { createAnthropicModel, MissingApiKeyError } from '../../src/agent/anthropic-model.js';
import { canonicalModelId, missingModelMessage, modelConfigured, modelProvider, type ProviderSettings, providerSettings } from '../../src/agent/model-provider.js';
import { anthropicClient, cloudClient } from '../../src/agent/provider-client.js';
import { checkAgentChoice, selectAgent, wantsClaude } from '../../src/agent/select-agent.js';
import { UsageError } from '../../src/common/errors.js';
import { claudeHooks } from '../../src/github/claude-hooks.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { silentLogger } from '../helpers/goal-harness.js';

const BEDROCK = { GOAL_LOOP_PROVIDER: 'bedrock', AWS_REGION: 'eu-west-1' };
const VERTEX = { GOAL_LOOP_PROVIDER: 'vertex', ANTHROPIC_VERTEX_PROJECT_ID: 'my-project', CLOUD_ML_REGION: 'us-east5' };

describe('which provider, and is a model configured', () => {
  it('anthropic by default, with a key; bedrock with AWS_REGION; vertex with a project and a region', () => {
    expect(modelProvider({})).toBe('anthropic');
    expect(modelProvider({ GOAL_LOOP_PROVIDER: ' Bedrock ' })).toBe('bedrock');
    expect(modelConfigured({})).toBe(false);
    expect(modelConfigured({ ANTHROPIC_API_KEY: ' ' })).toBe(false);
    expect(modelConfigured({ ANTHROPIC_API_KEY: 'k' })).toBe(true);
    expect(modelConfigured({ GOAL_LOOP_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'k' })).toBe(true);
    expect(modelConfigured(BEDROCK)).toBe(true);
    expect(modelConfigured(VERTEX)).toBe(true);
    // A key of another provider does not make Bedrock or Vertex configured.
    expect(() => modelConfigured({ GOAL_LOOP_PROVIDER: 'bedrock', ANTHROPIC_API_KEY: 'k' })).toThrow(UsageError);
  });

  it('a provider chosen without its settings, or an unknown one, is a usage error that names what is missing', () => {
    expect(() => modelConfigured({ GOAL_LOOP_PROVIDER: 'bedrock' })).toThrow('GOAL_LOOP_PROVIDER=bedrock needs AWS_REGION in the environment');
    expect(() => modelConfigured({ GOAL_LOOP_PROVIDER: 'vertex', CLOUD_ML_REGION: 'us-east5' })).toThrow('GOAL_LOOP_PROVIDER=vertex needs ANTHROPIC_VERTEX_PROJECT_ID in the environment');
    expect(() => modelConfigured({ GOAL_LOOP_PROVIDER: 'vertex' })).toThrow('GOAL_LOOP_PROVIDER=vertex needs ANTHROPIC_VERTEX_PROJECT_ID and CLOUD_ML_REGION in the environment');
    expect(() => modelProvider({ GOAL_LOOP_PROVIDER: 'azure' })).toThrow(/GOAL_LOOP_PROVIDER must be one of anthropic, bedrock, vertex \(got "azure"\)/);
    expect(missingModelMessage({})).toMatch(/^ANTHROPIC_API_KEY is not set/);
    expect(missingModelMessage(BEDROCK)).toBeUndefined();
  });

  it('the agent choice: auto runs Claude on any configured provider; claude without one names the missing setting', () => {
    expect(wantsClaude('auto', BEDROCK)).toBe(true);
    expect(wantsClaude('auto', VERTEX)).toBe(true);
    expect(wantsClaude('auto', {})).toBe(false);
    expect(() => checkAgentChoice('claude', { GOAL_LOOP_PROVIDER: 'bedrock' })).toThrow('--agent claude: GOAL_LOOP_PROVIDER=bedrock needs AWS_REGION in the environment');
    expect(() => checkAgentChoice('auto', { GOAL_LOOP_PROVIDER: 'vertex' })).toThrow(UsageError);
    expect(() => checkAgentChoice('scripted', { GOAL_LOOP_PROVIDER: 'vertex' })).not.toThrow();
    const deps = { sandbox: new ProcessSandbox(), logger: silentLogger, model: 'anthropic.claude-sonnet-4-5-20250929-v1:0' };
    expect(selectAgent('auto', deps, BEDROCK)?.name).toBe('claude');
  });

  it("the App's Claude hooks follow the same rule", () => {
    expect(Object.keys(claudeHooks({}, silentLogger))).toEqual([]);
    expect(Object.keys(claudeHooks(BEDROCK, silentLogger)).sort()).toEqual(['agentFor', 'planner']);
    expect(Object.keys(claudeHooks(VERTEX, silentLogger)).sort()).toEqual(['agentFor', 'planner']);
    expect(() => claudeHooks({ GOAL_LOOP_PROVIDER: 'bedrock' }, silentLogger)).toThrow(/needs AWS_REGION/);
  });

  it('createAnthropicModel keeps its missing-key error for Anthropic and names the setting for the others', () => {
    expect(() => createAnthropicModel({ env: {} })).toThrow(MissingApiKeyError);
    expect(() => createAnthropicModel({ env: { GOAL_LOOP_PROVIDER: 'bedrock' } })).toThrow(/GOAL_LOOP_PROVIDER=bedrock needs AWS_REGION/);
    // Built without a request: Bedrock's and Vertex's clients are made on the first one.
    expect(createAnthropicModel({ env: VERTEX, model: 'claude-sonnet-4-5@20250929' }).id).toBe('claude-sonnet-4-5@20250929');
  });
});

describe('which client is built', () => {
  it("Anthropic's API: the Anthropic client, with the base URL given", () => {
    const client = anthropicClient(settingsOf('anthropic', { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' }), { timeoutMs: 1000, env: {} });
    expect(client).toBeInstanceOf(Anthropic);
    expect((client as Anthropic).baseURL).toBe('http://127.0.0.1:9');
    expect((client as Anthropic).maxRetries).toBe(0);
  });

  it("Bedrock: Anthropic's Bedrock client for the region, its own retries off, static keys from the given environment", async () => {
    const env = { ...BEDROCK, AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
    const client = await cloudClient(settingsOf('bedrock', env), { timeoutMs: 1000, env });
    expect(client).toBeInstanceOf(AnthropicBedrock);
    const bedrock = client as AnthropicBedrock;
    expect(bedrock.baseURL).toBe('https://bedrock-runtime.eu-west-1.amazonaws.com');
    expect(bedrock.awsRegion).toBe('eu-west-1');
    expect(bedrock.awsAccessKey).toBe('AKIDEXAMPLE');
    expect(bedrock.maxRetries).toBe(0);
    // No key in the given environment: the AWS chain, never a Bedrock API key read behind its back.
    const chained = (await cloudClient(settingsOf('bedrock', BEDROCK), { timeoutMs: 1000, env: BEDROCK })) as AnthropicBedrock;
    expect(chained.awsAccessKey).toBeNull();
    expect(chained.apiKey).toBeNull();
  });

  it('the Bedrock and Vertex SDKs are loaded only when chosen (a dynamic import, in one file)', () => {
    const importers: string[] = [];
    for (const file of sourceFiles('src')) {
      const text = readFileSync(file, 'utf8');
      if (/^import\s(?!type\b)[^;]*from '@anthropic-ai\/(bedrock|vertex)-sdk'/m.test(text)) importers.push(`${file} (static)`);
      else if (/import\('@anthropic-ai\/(bedrock|vertex)-sdk'\)/.test(text)) importers.push(file);
    }
    expect(importers).toEqual([join('src', 'agent', 'provider-client.ts')]);
  });

  it("prices and describes a provider's model id by the model it names", () => {
    expect(canonicalModelId('anthropic.claude-sonnet-4-5-20250929-v1:0')).toBe('claude-sonnet-4-5-20250929-v1:0');
    expect(canonicalModelId('us.anthropic.claude-opus-4-1-20250805-v1:0')).toBe('claude-opus-4-1-20250805-v1:0');
    expect(canonicalModelId('claude-sonnet-4-5@20250929')).toBe('claude-sonnet-4-5@20250929');
    const onBedrock = createAnthropicModel({ env: BEDROCK, model: 'global.anthropic.claude-sonnet-5-5-20260101-v1:0' });
    expect(onBedrock.pricing).toMatchObject({ model: 'claude-sonnet-5-5', known: true });
    expect(onBedrock.forcedToolChoice).toBe(false);
    const onVertex = createAnthropicModel({ env: VERTEX, model: 'claude-sonnet-5-5@20260101' });
    expect(onVertex.pricing).toMatchObject({ model: 'claude-sonnet-5-5', known: true });
    expect(onVertex.forcedToolChoice).toBe(false);
  });
});

/** The settings of the provider the environment must choose. */
function settingsOf<P extends ProviderSettings['provider']>(provider: P, env: NodeJS.ProcessEnv): Extract<ProviderSettings, { provider: P }> {
  const settings = providerSettings(env);
  expect(settings.provider).toBe(provider);
  return settings as Extract<ProviderSettings, { provider: P }>;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}
