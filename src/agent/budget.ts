import type { Usage } from '../goal/usage.js';
import type { ModelRequest } from './model.js';
import { costUsd, type ModelPricing, worstCaseCostUsd } from './pricing.js';

/** No request is sent with less room to answer than this. */
export const MIN_OUTPUT_TOKENS = 1024;
/** Allowance for what the API adds to a prompt: its tool-use system prompt and message framing. */
export const PROMPT_OVERHEAD_TOKENS = 1000;

/**
 * An upper bound on a request's prompt tokens. A token always stands for at least one byte of
 * the text it encodes, so the UTF-8 size of the serialized request (JSON quoting and keys only add
 * to it) plus a fixed allowance for the API's own additions can never be less than the count the
 * API bills.
 */
export function promptTokenBound(request: Pick<ModelRequest, 'system' | 'tools' | 'messages'>): number {
  const body = JSON.stringify({ system: request.system, tools: request.tools, messages: request.messages });
  return Buffer.byteLength(body, 'utf8') + PROMPT_OVERHEAD_TOKENS;
}

export type Admission = { ok: true; maxTokens: number; worstCaseUsd: number } | { ok: false; reason: string };

/**
 * The cost cap, checked before every request. The rule:
 *
 * 1. The worst case of the next request is its prompt bound (`promptTokenBound`) billed at the
 *    dearest input rate, plus `max_tokens` of output.
 * 2. If the budget left cannot pay the worst case with `max_tokens` = MIN_OUTPUT_TOKENS, no request
 *    is sent: the caller stops (the goal ends STOPPED, "cost_cap_usd reached").
 * 3. Otherwise `max_tokens` is lowered, if need be, until the worst case fits what is left.
 *
 * So the spend, charged from the usage the API reports, can never pass the budget.
 */
export class CostGuard {
  private spent = 0;

  constructor(
    readonly limitUsd: number,
    readonly pricing: ModelPricing,
  ) {}

  get spentUsd(): number {
    return this.spent;
  }

  get remainingUsd(): number {
    return Math.max(0, this.limitUsd - this.spent);
  }

  admit(promptTokens: number, wantedMaxTokens: number): Admission {
    const left = this.remainingUsd;
    const minimal = worstCaseCostUsd(this.pricing, promptTokens, MIN_OUTPUT_TOKENS);
    if (minimal > left) {
      return {
        ok: false,
        reason: `cost_cap_usd reached: the next model request could cost up to $${minimal.toFixed(4)} and only $${left.toFixed(4)} of the budget is left`,
      };
    }
    let maxTokens = Math.max(MIN_OUTPUT_TOKENS, wantedMaxTokens);
    if (Number.isFinite(left)) {
      // Lower max_tokens until the worst case fits; the long-prompt tier may apply, so re-check.
      const perOutput = worstCaseCostUsd(this.pricing, promptTokens, maxTokens) - worstCaseCostUsd(this.pricing, promptTokens, 0);
      if (worstCaseCostUsd(this.pricing, promptTokens, maxTokens) > left && perOutput > 0) {
        const inputCost = worstCaseCostUsd(this.pricing, promptTokens, 0);
        maxTokens = Math.max(MIN_OUTPUT_TOKENS, Math.floor(((left - inputCost) / perOutput) * maxTokens));
        while (maxTokens > MIN_OUTPUT_TOKENS && worstCaseCostUsd(this.pricing, promptTokens, maxTokens) > left) maxTokens -= 1;
      }
    }
    return { ok: true, maxTokens, worstCaseUsd: worstCaseCostUsd(this.pricing, promptTokens, maxTokens) };
  }

  /** Adds a finished request's cost; returns it. */
  charge(usage: Usage): number {
    const cost = costUsd(usage, this.pricing);
    this.spent += cost;
    return cost;
  }
}
