import { resolveLimits, riskExceeds, type LoopLimits } from '../../config/limits.js';
import { RISK_LEVELS, type LimitsOverride } from '../../goal/schema.js';
import type { Counters } from '../../ports/ledger.js';

type NumericLimit = Exclude<keyof LoopLimits, 'max_risk'>;
const NUMERIC: readonly NumericLimit[] = ['max_iterations', 'max_retries', 'error_threshold', 'cost_cap_usd', 'max_wall_minutes', 'task_timeout_s'];

/** Budgets a running goal enforces at once when lowered; the others apply from the next run. */
export const LIVE_LIMITS: ReadonlySet<keyof LoopLimits> = new Set(['max_iterations', 'cost_cap_usd', 'max_wall_minutes']);

/**
 * The limits of an externally driven goal. The driver may have written the spec itself, so the
 * spec's `limits` can only tighten the repo config's (unlike `goal-loop run`, where a human hands
 * in the spec). `overrides` are changes made through `goal_config`, already vetted.
 */
export function effectiveLimits(config: Partial<LoopLimits>, spec: LimitsOverride | undefined, overrides: LimitsOverride = {}): LoopLimits {
  return resolveLimits(tighten(resolveLimits(config), spec), overrides);
}

/** `base` with each key of `layer` applied only where it is stricter. */
export function tighten(base: LoopLimits, layer: LimitsOverride | undefined): LoopLimits {
  const out = { ...base };
  if (!layer) return out;
  for (const key of NUMERIC) {
    const v = layer[key];
    if (v !== undefined && v < out[key]) out[key] = v;
  }
  if (layer.max_risk && riskExceeds(out.max_risk, layer.max_risk)) out.max_risk = layer.max_risk;
  return out;
}

/** The keys of `patch` that loosen `current` (more budget, or more risk without approval). */
export function loosenedKeys(current: LoopLimits, patch: LimitsOverride): Array<keyof LoopLimits> {
  const out: Array<keyof LoopLimits> = [];
  for (const key of NUMERIC) {
    const v = patch[key];
    if (v !== undefined && v > current[key]) out.push(key);
  }
  if (patch.max_risk && RISK_LEVELS.indexOf(patch.max_risk) > RISK_LEVELS.indexOf(current.max_risk)) out.push('max_risk');
  return out;
}

/**
 * The live budgets, checked whenever an attempt is handed to the external agent. The messages
 * are the transition function's own, so a STOP reads the same whoever tripped it.
 */
export function liveBudgetTripped(limits: LoopLimits, counters: Pick<Counters, 'iterations' | 'cost_usd'>, runStartedAt: number, now: number): string | undefined {
  // The attempt being handed out is already counted: only more than the maximum is too many.
  if (counters.iterations > limits.max_iterations) return `max_iterations reached (${limits.max_iterations})`;
  if (counters.cost_usd > 0 && counters.cost_usd >= limits.cost_cap_usd) {
    return `cost_cap_usd reached ($${counters.cost_usd.toFixed(2)} of $${limits.cost_cap_usd})`;
  }
  if (now - runStartedAt >= limits.max_wall_minutes * 60_000) return `max_wall_minutes reached (${limits.max_wall_minutes})`;
  return undefined;
}

/** Which safeguard a stop reason names (the STOP answer of `next_task`). */
export function safeguardOf(state: string, stopReason: string | null | undefined): string {
  const reason = stopReason ?? '';
  if (state === 'LOOP_COMPLETE') return 'complete';
  if (state === 'AWAITING_APPROVAL') return 'approval';
  if (state === 'ESCALATED') return 'escalated';
  if (state === 'PAUSED') return 'paused';
  if (state === 'FAILED') return 'internal_error';
  for (const key of ['max_iterations', 'cost_cap_usd', 'max_wall_minutes'] as const) if (reason.startsWith(key)) return key;
  if (reason.startsWith('circuit breaker')) return 'circuit_breaker';
  return 'stopped';
}
