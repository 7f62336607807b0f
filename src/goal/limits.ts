import { RISK_LEVELS, type LimitsOverride, type Risk } from './schema.js';

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

/** Later layers win, as given: for the owner's and humans' layers only (see effectiveLimits). */
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

type NumericLimit = Exclude<keyof LoopLimits, 'max_risk'>;
const NUMERIC: readonly NumericLimit[] = ['max_iterations', 'max_retries', 'error_threshold', 'cost_cap_usd', 'max_wall_minutes', 'task_timeout_s'];

/**
 * The one rule for a goal's limits, wherever it runs: defaults < repo config, then the spec's
 * `limits` only where stricter (a spec may come from an issue or a model), then a human's
 * changes as given (`/goal budget`, an elicited `goal_config`).
 */
export function effectiveLimits(config: Partial<LoopLimits> | undefined, spec: LimitsOverride | undefined, human?: LimitsOverride): LoopLimits {
  return resolveLimits(tighten(resolveLimits(config), spec), human);
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
  if (patch.max_risk && riskExceeds(patch.max_risk, current.max_risk)) out.push('max_risk');
  return out;
}

export function riskExceeds(risk: Risk, max: Risk): boolean {
  return RISK_LEVELS.indexOf(risk) > RISK_LEVELS.indexOf(max);
}
