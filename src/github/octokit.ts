import Bottleneck from 'bottleneck';
import type { Logger } from 'pino';
import { ProbotOctokit } from 'probot';
import { pauseForSecondaryLimit, type WriteBudgetWiring, writeBudgetPlugin } from './write-budget-plugin.js';

const MAX_RATE_LIMIT_RETRIES = 3;

export interface OctokitTuning {
  /** Milliseconds per second of `retry-after` (1000 in production; tests shrink it). */
  retryAfterBaseMs?: number;
  /** Spacing of write requests (GitHub asks for about a second, three for ones that notify; tests use 0). */
  writeMinTimeMs?: number;
  /**
   * The write budget shared by every process on the ledger: an installation client takes a slot
   * before each write, and a secondary rate limit pauses the installation's writes everywhere.
   */
  writeBudget?: WriteBudgetWiring;
}

/**
 * Probot's Octokit, with rate limits (primary and secondary) waited out and retried a bounded
 * number of times; 5xx answers are retried by Probot's retry plugin.
 */
export function goalLoopOctokit(tuning: OctokitTuning = {}): typeof ProbotOctokit {
  const retry = (kind: string) => (retryAfter: number, options: { method: string; url: string }, octokit: { log: Logger }, retryCount: number) => {
    octokit.log.warn(`${kind} on ${options.method} ${options.url}; retry ${retryCount + 1} in ${retryAfter}s`);
    return retryCount < MAX_RATE_LIMIT_RETRIES;
  };
  const retrySecondary = retry('secondary rate limit');
  const { writeBudget } = tuning;
  const throttle = {
    onRateLimit: retry('rate limit'),
    onSecondaryRateLimit: writeBudget
      ? async (retryAfter: number, options: { method: string; url: string }, octokit: { log: Logger }, retryCount: number) => {
          const again = retrySecondary(retryAfter, options, octokit, retryCount);
          await pauseForSecondaryLimit(writeBudget, octokit, retryAfter, again, tuning.retryAfterBaseMs ?? 1000);
          return again;
        }
      : retrySecondary,
    ...(tuning.retryAfterBaseMs !== undefined ? { retryAfterBaseValue: tuning.retryAfterBaseMs } : {}),
    ...(tuning.writeMinTimeMs !== undefined
      ? {
          write: new Bottleneck.Group({ maxConcurrent: 1, minTime: tuning.writeMinTimeMs }),
          notifications: new Bottleneck.Group({ maxConcurrent: 1, minTime: tuning.writeMinTimeMs }),
        }
      : {}),
  };
  // A function, so our throttle settings are merged into (not replaced by) what Probot passes.
  const Octokit = ProbotOctokit.defaults((options: Record<string, unknown>) => ({
    ...options,
    throttle: { ...(options.throttle as object | undefined), ...throttle },
    ...(tuning.retryAfterBaseMs !== undefined ? { retry: { ...(options.retry as object | undefined), retryAfterBaseValue: tuning.retryAfterBaseMs } } : {}),
  }));
  // Added last, so its hook runs before the throttle's and the retries': a write waits for its slot
  // first, and the throttle's own retries of it are not taken again.
  return writeBudget ? (Octokit.plugin(writeBudgetPlugin(writeBudget) as never) as typeof ProbotOctokit) : Octokit;
}

export const GoalLoopOctokit = goalLoopOctokit();
