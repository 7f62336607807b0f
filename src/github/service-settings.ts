import type { ProbotOctokit } from 'probot';
import { GoalLoopOctokit, goalLoopOctokit } from './octokit.js';

/** Tuning a service reads from its environment (all optional; production defaults otherwise). */
export interface ServiceSettings {
  /** GOAL_LOOP_CONCURRENCY: goals one process works at once (default 2). */
  concurrency: number;
  /** GOAL_LOOP_LEASE_MS: a dead worker's goals are resumed this long after its last heartbeat (30 s). */
  leaseMs?: number;
  /** GOAL_LOOP_POLL_MS: how often an idle worker looks at the queue (1 s). */
  pollMs?: number;
  /** GOAL_LOOP_STATUS_INTERVAL_MS: least time between two status-comment edits (3 s). */
  minUpdateIntervalMs?: number;
  /** The Octokit class; GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS spaces write requests (GitHub asks ~1 s). */
  Octokit: typeof ProbotOctokit;
}

export function serviceSettings(env: NodeJS.ProcessEnv): ServiceSettings {
  const num = (v: string | undefined, min: number) => {
    const n = Number.parseInt(v ?? '', 10);
    return Number.isFinite(n) && n >= min ? n : undefined;
  };
  const leaseMs = num(env.GOAL_LOOP_LEASE_MS, 300); // shorter leases expire between heartbeats
  const pollMs = num(env.GOAL_LOOP_POLL_MS, 1);
  const minUpdateIntervalMs = num(env.GOAL_LOOP_STATUS_INTERVAL_MS, 0);
  const writeMinTimeMs = num(env.GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS, 0);
  return {
    concurrency: num(env.GOAL_LOOP_CONCURRENCY, 1) ?? 2,
    ...(leaseMs ? { leaseMs } : {}),
    ...(pollMs ? { pollMs } : {}),
    ...(minUpdateIntervalMs !== undefined ? { minUpdateIntervalMs } : {}),
    Octokit: writeMinTimeMs !== undefined ? goalLoopOctokit({ writeMinTimeMs }) : GoalLoopOctokit,
  };
}
