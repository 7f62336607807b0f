import { budgetTripped, type LoopLimits } from '../goal/limits.js';
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
  // The attempt being handed out is already counted in `iterations`.
  return budgetTripped(limits, { iterations: counters.iterations, costUsd: counters.cost_usd, elapsedMs: now - runStartedAt });
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
