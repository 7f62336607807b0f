import { z } from 'zod';

export const RISK_LEVELS = ['low', 'medium', 'high', 'critical'] as const;
export type Risk = (typeof RISK_LEVELS)[number];

/**
 * The safeguards the controller enforces, never left to the model, declared once: each limit's
 * type, default and meaning. Everything else derives from this schema: the `LoopLimits` type,
 * `DEFAULT_LIMITS`, the spec's `limits:` override (`LimitsSchema`), the repo config's keys
 * (`limitConfigKeys`) and the key list (`LIMIT_KEYS`).
 *
 * Direction: every limit is stricter when lower (a number, or a risk earlier in RISK_LEVELS);
 * `tighten` and `loosenedKeys` read it through `strictness`.
 */
export const LoopLimitsSchema = z.strictObject({
  max_iterations: z.number().int().positive().default(50).describe('Attempts allowed over the whole goal.'),
  max_retries: z.number().int().positive().default(3).describe('Attempts allowed per task before it escalates (3 means at most 3 attempts).'),
  error_threshold: z.number().int().positive().default(3).describe('Consecutive infrastructure errors that trip the circuit breaker and stop the goal.'),
  cost_cap_usd: z.number().nonnegative().default(10).describe('Model spend allowed for the goal, in US dollars.'),
  max_wall_minutes: z.number().positive().default(120).describe('Wall-clock minutes one run of the loop may take.'),
  task_timeout_s: z.number().int().positive().default(600).describe('Seconds one command (run step, verification) may run before it is killed.'),
  max_turns: z
    .number()
    .int()
    .positive()
    .default(100)
    .describe('Model requests the Claude agent may make in one attempt; the attempt then ends ("turn limit reached"), the verification decides, and a failure says so to the next attempt.'),
  max_same_failure: z
    .number()
    .int()
    .positive()
    .default(2)
    .describe('Identical verification failures in a row (timings, paths and addresses aside) after which the task escalates with "no progress" instead of spending its remaining attempts.'),
  max_risk: z.enum(RISK_LEVELS).default('high').describe('Tasks whose risk is above this wait for approval.'),
});

export type LoopLimits = z.output<typeof LoopLimitsSchema>;

type LimitShape = typeof LoopLimitsSchema.shape;
type LimitKey = keyof LimitShape;
/** Each limit as a key that may be left out: its own checks, no default applied. */
type OptionalLimits = { [K in LimitKey]: z.ZodOptional<LimitShape[K]['def']['innerType']> };

/** Every limit's key, in the schema's order. */
export const LIMIT_KEYS = Object.keys(LoopLimitsSchema.shape) as LimitKey[];

export const DEFAULT_LIMITS: Readonly<LoopLimits> = Object.freeze(LoopLimitsSchema.parse({}));

/**
 * The limits as optional keys, described. `documentDefault` puts each default in the JSON Schema
 * (for the repo config, whose absent keys fall back to it) without zod applying it: an absent key
 * stays absent, so a later layer can tell "not set" from "set to the default".
 */
function optionalLimits(documentDefault: boolean): OptionalLimits {
  const shape: Record<string, z.ZodType> = {};
  for (const key of LIMIT_KEYS) {
    const limit = LoopLimitsSchema.shape[key];
    const meta = { description: limit.description, ...(documentDefault ? { default: DEFAULT_LIMITS[key] } : {}) };
    shape[key] = limit.def.innerType.optional().meta(meta);
  }
  return shape as OptionalLimits;
}

/** The spec's `limits:`: each key optional. */
export const LimitsSchema = z.strictObject(optionalLimits(false)).describe('Stricter limits for this goal: each may only tighten the repository configuration; looser values are ignored.');
export type LimitsOverride = z.infer<typeof LimitsSchema>;

/** The repo config's limit keys (`.github/goal-loop.yml`): optional, their defaults documented. */
export function limitConfigKeys(): OptionalLimits {
  return optionalLimits(true);
}

/** Later layers win, as given: for the owner's and humans' layers only (see effectiveLimits). */
export function resolveLimits(...layers: Array<LimitsOverride | undefined>): LoopLimits {
  const out: LoopLimits = { ...DEFAULT_LIMITS };
  for (const layer of layers) {
    if (!layer) continue;
    for (const key of LIMIT_KEYS) {
      const value = layer[key];
      if (value !== undefined) (out as Record<LimitKey, unknown>)[key] = value;
    }
  }
  return out;
}

/**
 * The one rule for a goal's limits, wherever it runs: defaults < repo config, then the spec's
 * `limits` only where stricter (a spec may come from an issue or a model), then a human's
 * changes as given (`/goal budget`, an elicited `goal_config`).
 */
export function effectiveLimits(config: Partial<LoopLimits> | undefined, spec: LimitsOverride | undefined, human?: LimitsOverride): LoopLimits {
  return resolveLimits(tighten(resolveLimits(config), spec), human);
}

/**
 * The spec's limits that `effectiveLimits` ignored: looser than the config, and not set by a human
 * since. As `key: value`, for the run's warning.
 */
export function ignoredSpecLimits(config: Partial<LoopLimits> | undefined, spec: LimitsOverride | undefined, human?: LimitsOverride): string[] {
  if (!spec) return [];
  return loosenedKeys(resolveLimits(config), spec)
    .filter((key) => human?.[key] === undefined)
    .map((key) => `${key}: ${String(spec[key])}`);
}

/** Where a limit's value stands: lower is stricter (a risk ranks by its place in RISK_LEVELS). */
export function strictness(value: number | Risk): number {
  return typeof value === 'number' ? value : RISK_LEVELS.indexOf(value);
}

/** `base` with each key of `layer` applied only where it is stricter. */
export function tighten(base: LoopLimits, layer: LimitsOverride | undefined): LoopLimits {
  const out = { ...base };
  if (!layer) return out;
  for (const key of LIMIT_KEYS) {
    const v = layer[key];
    if (v !== undefined && strictness(v) < strictness(out[key])) (out as Record<LimitKey, unknown>)[key] = v;
  }
  return out;
}

/** The keys of `patch` that loosen `current` (more budget, or more risk without approval). */
export function loosenedKeys(current: LoopLimits, patch: LimitsOverride): Array<keyof LoopLimits> {
  return LIMIT_KEYS.filter((key) => {
    const v = patch[key];
    return v !== undefined && strictness(v) > strictness(current[key]);
  });
}

/** A task that may change the tests that verify it counts as at least `high` (it can weaken its own grader). */
export function effectiveRisk(task: { risk: Risk; may_edit_tests?: boolean | undefined }): Risk {
  return task.may_edit_tests && strictness(task.risk) < strictness('high') ? 'high' : task.risk;
}

export function riskExceeds(risk: Risk, max: Risk): boolean {
  return strictness(risk) > strictness(max);
}

/** What a goal has used of its live budgets when the next iteration would begin. */
export interface BudgetUse {
  /** Iterations begun, counting the one about to begin. */
  iterations: number;
  costUsd: number;
  elapsedMs: number;
}

/**
 * The one budget check (the loop before each iteration, the MCP server before it hands out an
 * attempt): the safeguard the next iteration would trip, in the words a STOP reports, or undefined.
 */
export function budgetTripped(limits: Pick<LoopLimits, 'max_iterations' | 'cost_cap_usd' | 'max_wall_minutes'>, use: BudgetUse): string | undefined {
  if (use.iterations > limits.max_iterations) return `max_iterations reached (${limits.max_iterations})`;
  if (use.costUsd > 0 && use.costUsd >= limits.cost_cap_usd) return `cost_cap_usd reached ($${use.costUsd.toFixed(2)} of $${limits.cost_cap_usd})`;
  if (use.elapsedMs >= limits.max_wall_minutes * 60_000) return `max_wall_minutes reached (${limits.max_wall_minutes})`;
  return undefined;
}
