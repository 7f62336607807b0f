import type { ProbotOctokit } from 'probot';
import { DEFAULT_WRITE_LIMITS, type WriteBudgetStore, type WriteLimits } from '../ports/write-budget.js';
import { goalLoopOctokit } from './octokit.js';

/**
 * A second between two writes of one process, those that notify included: what GitHub asks of
 * mutative requests. (Octokit's throttle would space notifying ones 3 s; content creation is
 * bounded across processes by the write budget instead, and a 3 s spacing delayed the status
 * comments of a burst of goals by a minute.)
 */
export const DEFAULT_WRITE_INTERVAL_MS = 1000;

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
  /**
   * GOAL_LOOP_GITHUB_WRITES_PER_MINUTE, GOAL_LOOP_GITHUB_WRITES_PER_HOUR: the write budget each
   * installation shares across every process on one ledger (70 and 450; ports/write-budget.ts).
   */
  writeLimits: WriteLimits;
  /**
   * GOAL_LOOP_QUEUE_REPORT_MS: how often issues of goals waiting for a worker are told their place
   * (5 s; 0 turns it off); position refreshes take a tenth of the minute's write budget at most.
   */
  queueReport: { intervalMs: number; refreshesPerMinute: number };
  /** GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: least time between two write requests of one process (1 s). */
  writeMinTimeMs: number;
  /** The Octokit class: writes spaced by writeMinTimeMs, and taken from the write budget when the store is given. */
  Octokit: typeof ProbotOctokit;
}

/** The settings in `env`; with `writeBudget` (the store's), the Octokit class takes every write from it. */
export function serviceSettings(env: NodeJS.ProcessEnv, writeBudget?: WriteBudgetStore): ServiceSettings {
  const num = (v: string | undefined, min: number) => {
    const n = Number.parseInt(v ?? '', 10);
    return Number.isFinite(n) && n >= min ? n : undefined;
  };
  const leaseMs = num(env.GOAL_LOOP_LEASE_MS, 300); // shorter leases expire between heartbeats
  const pollMs = num(env.GOAL_LOOP_POLL_MS, 1);
  const minUpdateIntervalMs = num(env.GOAL_LOOP_STATUS_INTERVAL_MS, 0);
  const writeMinTimeMs = num(env.GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS, 0) ?? DEFAULT_WRITE_INTERVAL_MS;
  const writeLimits = writeLimitsFrom(num(env.GOAL_LOOP_GITHUB_WRITES_PER_MINUTE, 1), num(env.GOAL_LOOP_GITHUB_WRITES_PER_HOUR, 1));
  return {
    concurrency: num(env.GOAL_LOOP_CONCURRENCY, 1) ?? 2,
    ...(leaseMs ? { leaseMs } : {}),
    ...(pollMs ? { pollMs } : {}),
    ...(minUpdateIntervalMs !== undefined ? { minUpdateIntervalMs } : {}),
    writeLimits,
    writeMinTimeMs,
    queueReport: { intervalMs: num(env.GOAL_LOOP_QUEUE_REPORT_MS, 0) ?? 5000, refreshesPerMinute: Math.max(1, Math.floor(writeLimits.windows[0]!.max / 10)) },
    Octokit: goalLoopOctokit({ writeMinTimeMs, ...(writeBudget ? { writeBudget: { store: writeBudget, limits: writeLimits } } : {}) }),
  };
}

/** The default limits with the minute's and the hour's maximum replaced where given. */
function writeLimitsFrom(perMinute: number | undefined, perHour: number | undefined): WriteLimits {
  const [minute, hour] = DEFAULT_WRITE_LIMITS.windows as [{ ms: number; max: number }, { ms: number; max: number }];
  return {
    ...DEFAULT_WRITE_LIMITS,
    windows: [
      { ms: minute.ms, max: perMinute ?? minute.max },
      { ms: hour.ms, max: perHour ?? hour.max },
    ],
  };
}
