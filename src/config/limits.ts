import { RISK_LEVELS, type LimitsOverride, type Risk } from '../goal/schema.js';

/** The safeguards the controller enforces; never left to the model. */
export interface LoopLimits {
  max_iterations: number;
  max_retries: number;
  error_threshold: number;
  cost_cap_usd: number;
  max_wall_minutes: number;
  task_timeout_s: number;
  max_risk: Risk;
}

export const DEFAULT_LIMITS: Readonly<LoopLimits> = Object.freeze({
  max_iterations: 50,
  max_retries: 3,
  error_threshold: 3,
  cost_cap_usd: 10,
  max_wall_minutes: 120,
  task_timeout_s: 600,
  max_risk: 'high',
});

/** Later layers win: defaults < repo config < goal spec `limits`. */
export function resolveLimits(...layers: Array<LimitsOverride | undefined>): LoopLimits {
  const out: LoopLimits = { ...DEFAULT_LIMITS };
  for (const layer of layers) {
    if (!layer) continue;
    for (const [key, value] of Object.entries(layer)) {
      if (value !== undefined) (out as unknown as Record<string, unknown>)[key] = value;
    }
  }
  return out;
}

export function riskExceeds(risk: Risk, max: Risk): boolean {
  return RISK_LEVELS.indexOf(risk) > RISK_LEVELS.indexOf(max);
}
