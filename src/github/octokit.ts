import type { Logger } from 'pino';
import { ProbotOctokit } from 'probot';

const MAX_RATE_LIMIT_RETRIES = 3;

/**
 * Probot's Octokit, with rate limits (primary and secondary) waited out and retried a bounded
 * number of times; 5xx answers are retried by Probot's retry plugin.
 */
export const GoalLoopOctokit = ProbotOctokit.defaults({
  throttle: {
    onRateLimit: (retryAfter: number, options: { method: string; url: string }, octokit: { log: Logger }, retryCount: number) => {
      octokit.log.warn(`rate limit on ${options.method} ${options.url}; retry ${retryCount + 1} in ${retryAfter}s`);
      return retryCount < MAX_RATE_LIMIT_RETRIES;
    },
    onSecondaryRateLimit: (retryAfter: number, options: { method: string; url: string }, octokit: { log: Logger }, retryCount: number) => {
      octokit.log.warn(`secondary rate limit on ${options.method} ${options.url}; retry ${retryCount + 1} in ${retryAfter}s`);
      return retryCount < MAX_RATE_LIMIT_RETRIES;
    },
  },
});
