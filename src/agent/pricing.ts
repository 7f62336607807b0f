import type { Usage } from '../goal/usage.js';

/** US dollars per million tokens. Cache writes (5-minute TTL) and cache reads are priced apart. */
export interface Rates {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
}

export interface ModelPricing {
  /** The table entry used (or `unknown`). */
  model: string;
  rates: Rates;
  /**
   * A second tier some models charge when a request's prompt (input + cache reads + cache
   * writes) exceeds a threshold: every token of that request, output included, at these rates.
   */
  longPrompt?: { thresholdTokens: number; rates: Rates };
  /** False when the model is not in the table and the most expensive known rates are used. */
  known: boolean;
}

const r = (input: number, output: number, cacheWrite: number, cacheRead: number): Rates => ({ input, output, cacheWrite, cacheRead });

/**
 * Anthropic list prices (Claude API, per million tokens; cache write = the 5-minute TTL we use).
 * Keys are model ids or id prefixes: `claude-sonnet-4-5-20250929` is priced as `claude-sonnet-4-5`.
 * Update this table when prices change; an unknown model is priced at the most expensive rates
 * here, so the cost cap still holds (and a warning is logged).
 */
export const PRICE_TABLE: Readonly<Record<string, Omit<ModelPricing, 'model' | 'known'>>> = Object.freeze({
  'claude-fable-5-2': { rates: r(8, 40, 10, 0.2) },
  'claude-mythos-5-2': { rates: r(8, 40, 10, 0.2) },
  'claude-fable-5-1': { rates: r(10, 50, 12.5, 0.25) },
  'claude-mythos-5-1': { rates: r(10, 50, 12.5, 0.25) },
  'claude-fable-5': { rates: r(10, 50, 12.5, 1) },
  'claude-mythos-5': { rates: r(10, 50, 12.5, 1) },
  'claude-opus-5-5': { rates: r(4, 20, 5, 0.2) },
  'claude-opus-5': { rates: r(5, 25, 6.25, 0.5) },
  'claude-opus-4-8': { rates: r(5, 25, 6.25, 0.5) },
  'claude-opus-4-7': { rates: r(5, 25, 6.25, 0.5) },
  'claude-opus-4-6': { rates: r(5, 25, 6.25, 0.5) },
  'claude-opus-4-5': { rates: r(5, 25, 6.25, 0.5) },
  'claude-opus-4-1': { rates: r(15, 75, 18.75, 1.5) },
  'claude-opus-4': { rates: r(15, 75, 18.75, 1.5) },
  'claude-sonnet-5-5': { rates: r(2, 10, 2.5, 0.1) },
  'claude-sonnet-5': { rates: r(2, 10, 2.5, 0.2) },
  'claude-sonnet-4-6': { rates: r(3, 15, 3.75, 0.3) },
  'claude-sonnet-4-5': { rates: r(3, 15, 3.75, 0.3), longPrompt: { thresholdTokens: 200_000, rates: r(6, 22.5, 7.5, 0.6) } },
  'claude-sonnet-4': { rates: r(3, 15, 3.75, 0.3), longPrompt: { thresholdTokens: 200_000, rates: r(6, 22.5, 7.5, 0.6) } },
  'claude-3-7-sonnet': { rates: r(3, 15, 3.75, 0.3) },
  'claude-haiku-5-5': { rates: r(0.1, 0.5, 0.125, 0.01), longPrompt: { thresholdTokens: 100_000, rates: r(0.5, 2.5, 0.625, 0.05) } },
  'claude-haiku-4-5': { rates: r(1, 5, 1.25, 0.1) },
  'claude-3-5-haiku': { rates: r(0.8, 4, 1, 0.08) },
});

/** The most expensive rate of each kind in the table: the price of a model we do not know. */
function fallbackRates(): Rates {
  const all = Object.values(PRICE_TABLE).flatMap((p) => [p.rates, ...(p.longPrompt ? [p.longPrompt.rates] : [])]);
  return {
    input: Math.max(...all.map((x) => x.input)),
    output: Math.max(...all.map((x) => x.output)),
    cacheWrite: Math.max(...all.map((x) => x.cacheWrite)),
    cacheRead: Math.max(...all.map((x) => x.cacheRead)),
  };
}

/** The pricing of a model id: exact entry, else the longest table key the id starts with. */
export function pricingFor(modelId: string): ModelPricing {
  const id = modelId.trim().toLowerCase();
  const exact = PRICE_TABLE[id];
  if (exact) return { model: id, ...exact, known: true };
  const key = Object.keys(PRICE_TABLE)
    .filter((k) => id.startsWith(`${k}-`) || id.startsWith(`${k}@`) || id.startsWith(`${k}[`))
    .sort((a, b) => b.length - a.length)[0];
  if (key) return { model: key, ...PRICE_TABLE[key]!, known: true };
  return { model: 'unknown', rates: fallbackRates(), known: false };
}

/** The rates a request with this many prompt tokens pays. */
export function ratesFor(pricing: ModelPricing, promptTokens: number): Rates {
  return pricing.longPrompt && promptTokens > pricing.longPrompt.thresholdTokens ? pricing.longPrompt.rates : pricing.rates;
}

/** What one request's usage cost, in US dollars. */
export function costUsd(usage: Usage, pricing: ModelPricing): number {
  const rates = ratesFor(pricing, usage.input + usage.cache_read + usage.cache_write);
  return (usage.input * rates.input + usage.output * rates.output + usage.cache_write * rates.cacheWrite + usage.cache_read * rates.cacheRead) / 1_000_000;
}

/**
 * The most a request can cost: every prompt token billed at the dearest input rate (a cache
 * write costs more than plain input), `maxOutputTokens` of output, at the long-prompt tier when
 * the prompt could cross its threshold.
 */
export function worstCaseCostUsd(pricing: ModelPricing, promptTokens: number, maxOutputTokens: number): number {
  const rates = ratesFor(pricing, promptTokens);
  const inputRate = Math.max(rates.input, rates.cacheWrite, rates.cacheRead);
  return (promptTokens * inputRate + maxOutputTokens * rates.output) / 1_000_000;
}
