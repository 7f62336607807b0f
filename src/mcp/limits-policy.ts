import type { LoopLimits } from '../goal/limits.js';
import type { Counters } from '../ports/ledger.js';

// The rule itself lives with the limits, shared by the CLI, the App and this server.
export { effectiveLimits, loosenedKeys, tighten } from '../goal/limits.js';

/** Budgets a running goal enforces at once when lowered; the others apply from the next run. */
export const LIVE_LIMITS: ReadonlySet<keyof LoopLimits> = new Set(['max_iterations', 'cost_cap_usd', 'max_wall_minutes']);

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
  for (const key of LIVE_LIMITS) if (reason.startsWith(key)) return key;
  if (reason.startsWith('circuit breaker')) return 'circuit_breaker';
  return 'stopped';
}
