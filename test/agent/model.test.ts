import { describe, expect, it } from 'vitest';
import { createAnthropicModel, DEFAULT_MODEL, MissingApiKeyError, resolveModelId } from '../../src/agent/anthropic-model.js';
import { CostGuard, MIN_OUTPUT_TOKENS, promptTokenBound } from '../../src/agent/budget.js';
import { ModelError, type ModelRequest } from '../../src/agent/model.js';
import { costUsd, pricingFor, worstCaseCostUsd } from '../../src/agent/pricing.js';
import { checkAgentChoice, selectAgent } from '../../src/agent/select-agent.js';
import { UsageError } from '../../src/common/errors.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { apiError, overloaded, rateLimited, reply, text } from '../helpers/fake-anthropic.js';
import { silentLogger } from '../helpers/goal-harness.js';
import { claudeAgent, fakeApi, fakeModel, input, spec, workspace } from './fixtures.js';

const request = (over: Partial<ModelRequest> = {}): ModelRequest => ({
  system: [{ type: 'text', text: 'sys' }],
  tools: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  maxTokens: 2000,
  ...over,
});

describe('the Anthropic adapter (real SDK against the fake API)', () => {
  it('honours ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; maps the usage, cache reads and writes apart', async () => {
    const fake = await fakeApi();
    fake.push(reply([text('hello')], { input_tokens: 11, output_tokens: 7, cache_creation_input_tokens: 5, cache_read_input_tokens: 3 }));
    const model = fakeModel(fake);
    const res = await model.complete(request());
    expect(res).toMatchObject({ model: DEFAULT_MODEL, content: [{ type: 'text', text: 'hello' }], stopReason: 'end_turn', usage: { input: 11, output: 7, cache_write: 5, cache_read: 3 } });
    const headers = fake.requests[0]!.headers;
    expect(headers['x-api-key'] ?? headers.authorization?.replace(/^Bearer /, '')).toBe('sk-ant-test-key');
    expect(fake.requests[0]!.body).toMatchObject({ model: DEFAULT_MODEL, max_tokens: 2000 });
  });

  it('the model comes from the config, else GOAL_LOOP_MODEL, else a current Sonnet; no key, no model', () => {
    expect(resolveModelId('claude-opus-5-5', { GOAL_LOOP_MODEL: 'claude-haiku-5-5' })).toBe('claude-opus-5-5');
    expect(resolveModelId(undefined, { GOAL_LOOP_MODEL: 'claude-haiku-5-5' })).toBe('claude-haiku-5-5');
    expect(resolveModelId(undefined, {})).toBe('claude-sonnet-5-5');
    expect(() => createAnthropicModel({ env: {} })).toThrow(MissingApiKeyError);
  });

  it('retries 529 and 429 with one policy: each failure is one HTTP call', async () => {
    const fake = await fakeApi();
    fake.push(overloaded(), overloaded(), overloaded(), rateLimited(), reply([text('finally')]));
    const ws = await workspace({});
    const outcome = await claudeAgent(fake).work(input(spec({ objective: 'x', tasks: [{ id: 't', title: 't', verification: 'true' }] }), ws.dir));
    expect(outcome.ok).toBe(true);
    expect(fake.requests.map((r) => r.status)).toEqual([529, 529, 529, 429, 200]);
  });

  it('does not retry a request the API refuses (400); gives up on a persistent overload after a bounded number of tries', async () => {
    const fake = await fakeApi();
    fake.push(apiError(400, 'invalid_request_error', 'max_tokens: too large'));
    const err = await fakeModel(fake)
      .complete(request())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ status: 400, details: { retryable: false, attempts: 1 } });
    expect(fake.requests).toHaveLength(1);

    const busy = await fakeApi();
    busy.otherwise(() => overloaded());
    const err2 = await fakeModel(busy, { retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 } })
      .complete(request())
      .catch((e: unknown) => e);
    expect(err2).toMatchObject({ status: 529, details: { retryable: true, attempts: 2 } });
    expect((err2 as Error).message).toMatch(/overloaded/);
    expect(busy.requests).toHaveLength(2);
  });

  it.each([
    [529, 'overloaded_error', 1],
    [529, 'overloaded_error', 4],
    [500, 'api_error', 3],
    [503, 'api_error', 5],
  ] as const)('a %s storm makes at most N HTTP calls for one request (N = %s: the retry policy, the SDK adds none)', async (status, type, attempts) => {
    const storm = await fakeApi();
    storm.otherwise(() => apiError(status, type, 'storm'));
    const err = await fakeModel(storm, { retry: { attempts, baseDelayMs: 1, maxDelayMs: 2 } })
      .complete(request())
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status, details: { retryable: true, attempts } });
    expect(storm.requests).toHaveLength(attempts);
  });
});

describe('prices and the cost cap', () => {
  it('costs usage from the per-model table, cache writes and reads priced apart', () => {
    const sonnet = pricingFor('claude-sonnet-5-5');
    expect(costUsd({ input: 1_000_000, output: 0, cache_read: 0, cache_write: 0 }, sonnet)).toBe(2);
    expect(costUsd({ input: 0, output: 1_000_000, cache_read: 0, cache_write: 0 }, sonnet)).toBe(10);
    expect(costUsd({ input: 0, output: 0, cache_read: 1_000_000, cache_write: 0 }, sonnet)).toBe(0.1);
    expect(costUsd({ input: 0, output: 0, cache_read: 0, cache_write: 1_000_000 }, sonnet)).toBe(2.5);
    expect(pricingFor('claude-opus-4-1-20250805')).toMatchObject({ model: 'claude-opus-4-1', known: true, rates: { input: 15 } });
    // A long prompt moves a tiered model's whole request to the higher rates.
    const haiku = pricingFor('claude-haiku-5-5');
    expect(costUsd({ input: 100_000, output: 1000, cache_read: 0, cache_write: 0 }, haiku)).toBeCloseTo((100_000 * 0.1 + 1000 * 0.5) / 1e6, 12);
    expect(costUsd({ input: 100_000, output: 1000, cache_read: 1, cache_write: 0 }, haiku)).toBeCloseTo((100_000 * 0.5 + 1000 * 2.5 + 0.05) / 1e6, 12);
    // An unknown model is priced at the dearest known rates, so the cap still holds.
    expect(pricingFor('some-new-model')).toMatchObject({ known: false, rates: { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 } });
  });

  it('admits a request only if its worst case fits the budget left, lowering max_tokens near the cap', () => {
    const pricing = pricingFor('claude-sonnet-5-5');
    const guard = new CostGuard(0.25, pricing);
    expect(guard.admit(10_000, 16_000)).toMatchObject({ ok: true, maxTokens: 16_000, worstCaseUsd: 0.185 });
    guard.charge({ input: 95_000, output: 1000, cache_read: 0, cache_write: 0 }); // $0.20 -> $0.05 left
    const lowered = guard.admit(10_000, 16_000);
    expect(lowered.ok).toBe(true);
    if (lowered.ok) {
      expect(lowered.maxTokens).toBeLessThan(16_000);
      expect(lowered.maxTokens).toBeGreaterThanOrEqual(MIN_OUTPUT_TOKENS);
      expect(lowered.worstCaseUsd).toBeLessThanOrEqual(guard.remainingUsd + 1e-12);
      expect(worstCaseCostUsd(pricing, 10_000, lowered.maxTokens + 1)).toBeGreaterThan(guard.remainingUsd);
    }
    guard.charge({ input: 20_000, output: 500, cache_read: 0, cache_write: 0 }); // $0.045 -> $0.005 left
    expect(guard.admit(10_000, 16_000)).toEqual({
      ok: false,
      reason: expect.stringMatching(/^cost_cap_usd reached: the next model request could cost up to \$0\.0352 and only \$0\.0050 of the budget is left$/),
    });
    // The prompt bound never undercounts: at least one token per byte, plus the API's own additions.
    expect(promptTokenBound(request())).toBeGreaterThan(Buffer.byteLength(JSON.stringify(request().messages)));
  });

  it('a zero budget sends nothing', async () => {
    const fake = await fakeApi();
    const ws = await workspace({});
    const outcome = await claudeAgent(fake).work(input(spec({ objective: 'x', tasks: [{ id: 't', title: 't', verification: 'true' }] }), ws.dir, { budgetUsd: 0 }));
    expect(outcome).toMatchObject({ ok: false, kind: 'budget', error: expect.stringMatching(/^cost_cap_usd reached/), costUsd: 0 });
    expect(fake.requests).toHaveLength(0);
  });
});

describe('selectAgent', () => {
  const deps = { sandbox: new ProcessSandbox(), logger: silentLogger };
  it('scripted, or auto without a key: no agent; claude without a key: a usage error; claude or auto with a key: the Claude agent', () => {
    expect(selectAgent('scripted', deps, { ANTHROPIC_API_KEY: 'k' })).toBeUndefined();
    expect(selectAgent('auto', deps, {})).toBeUndefined();
    expect(() => selectAgent('claude', deps, {})).toThrow(UsageError);
    expect(() => checkAgentChoice('claude', {})).toThrow(/needs ANTHROPIC_API_KEY/);
    expect(selectAgent('claude', deps, { ANTHROPIC_API_KEY: 'k' })?.name).toBe('claude');
    expect(selectAgent('auto', { ...deps, model: 'claude-opus-5-5' }, { ANTHROPIC_API_KEY: 'k' })?.name).toBe('claude');
    expect(() => selectAgent('auto', undefined, { ANTHROPIC_API_KEY: 'k' })).toThrow(UsageError);
  });
});
