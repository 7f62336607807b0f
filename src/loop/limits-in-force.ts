import type { Logger } from 'pino';
import { effectiveLimits, loosenedKeys, resolveLimits, type LoopLimits } from '../goal/limits.js';
import type { GoalSpec, LimitsOverride } from '../goal/schema.js';

/**
 * The limits a run works under: the repo config's, tightened by the spec's, then a human's changes
 * as given. A spec key that would loosen the config is ignored, with a warning naming it.
 */
export function limitsInForce(spec: GoalSpec, configLimits: Partial<LoopLimits> | undefined, humanLimits: LimitsOverride | undefined, log: Logger): LoopLimits {
  const limits = effectiveLimits(configLimits, spec.limits, humanLimits);
  const ignored = (spec.limits ? loosenedKeys(resolveLimits(configLimits), spec.limits) : []).filter((k) => humanLimits?.[k] === undefined);
  if (ignored.length) {
    log.warn({ ignored }, `the goal spec's limits may only tighten the repo config; ignored: ${ignored.map((k) => `${k}: ${String(spec.limits![k])}`).join(', ')}`);
  }
  return limits;
}
