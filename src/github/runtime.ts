import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { type ApplicationFunction, createProbot, type Probot } from 'probot';
import { pick } from '../common/pick.js';
import type { RepoConfig } from '../config/repo-config.js';
import type { Store } from '../ledger/open-ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import type { WorkerPool } from '../worker/worker-pool.js';
import { MirrorCache } from '../workspace/mirror-cache.js';
import { PackageStores } from '../workspace/package-stores.js';
import { SetupCache } from '../workspace/setup-cache.js';
import { goalLoopApp } from './app.js';
import { claudeHooks } from './claude-hooks.js';
import type { Octokit } from './github-forge.js';
import { createGoalWorkers } from './goal-workers.js';
import { createIntake, type Intake } from './intake.js';
import { QueueReporter } from './queue-reporter.js';
import { serviceSettings } from './service-settings.js';
import type { WorkGoalDeps } from './work-goal.js';

/**
 * The GitHub App composed in one place: Probot, the store, the intake (thin handlers -> inbox ->
 * event processor -> durable queue) and the goal workers. `serve` and `worker` both start here
 * (createAppRuntime); tests build the same runtime on their own Probot (createRuntime).
 */

const INBOX_REPLAY_MS = 60_000;
const DEFAULT_QUEUE_REPORT = { intervalMs: 5000, refreshesPerMinute: 7 };

export type RuntimeRole = 'both' | 'webhooks' | 'workers';

export interface RuntimeOptions {
  probot: Probot;
  store: Pick<Store, 'ledger' | 'queue'>;
  logger: Logger;
  workspaceRoot: string;
  sandboxFor: (config: RepoConfig) => Promise<Sandbox>;
  /** `webhooks`: intake only (scale-out `serve`); `workers`: workers only (`worker`); `both`: embedded. */
  role?: RuntimeRole;
  concurrency?: number;
  workerId?: string;
  leaseMs?: number;
  pollMs?: number;
  minUpdateIntervalMs?: number;
  controlPollMs?: number;
  /** The Claude agent and planner (see claude-hooks.ts); without them goals use run steps only. */
  claude?: Pick<WorkGoalDeps, 'agentFor' | 'planner'>;
  /** Bare mirrors that goal workspaces are prepared from; default: `<workspaceRoot>/mirrors`, bounded by GOAL_LOOP_CACHE_MB. */
  mirrorCache?: MirrorCache;
  /**
   * The queue report (processes that take webhooks): how often waiting goals' issues are told
   * their place (0: never), and how many position refreshes a minute it may send. Default 5 s, 7.
   */
  queueReport?: { intervalMs: number; refreshesPerMinute: number };
}

/** The GitHub App's parts, wired: thin handlers -> inbox -> event processor -> durable queue -> workers. */
export interface GoalLoopRuntime {
  appFn: ApplicationFunction;
  intake: Intake;
  pool: WorkerPool | undefined;
  /** Replays the inbox and (with workers) resumes goals whose worker stopped; returns how many. */
  resumeInterrupted(): Promise<number>;
  /** Resolves when every accepted event is handled and (with workers) nothing is running or due. */
  idle(): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

export function createRuntime(opts: RuntimeOptions): GoalLoopRuntime {
  const role = opts.role ?? 'both';
  const auth = async (installationId: number) => (await opts.probot.auth(installationId)) as unknown as Octokit;
  const { ledger, queue } = opts.store;
  const pool =
    role === 'webhooks'
      ? undefined
      : createGoalWorkers({
          ledger,
          queue,
          logger: opts.logger,
          auth,
          workspaceRoot: opts.workspaceRoot,
          sandboxFor: opts.sandboxFor,
          concurrency: opts.concurrency ?? 2,
          ...(opts.workerId ? { workerId: opts.workerId } : {}),
          ...(opts.leaseMs ? { leaseMs: opts.leaseMs } : {}),
          ...(opts.pollMs ? { pollMs: opts.pollMs } : {}),
          ...(opts.minUpdateIntervalMs !== undefined ? { minUpdateIntervalMs: opts.minUpdateIntervalMs } : {}),
          ...(opts.controlPollMs !== undefined ? { controlPollMs: opts.controlPollMs } : {}),
          mirrorCache: opts.mirrorCache ?? MirrorCache.fromEnv(opts.workspaceRoot, process.env, opts.logger),
          ...pick(SetupCache.fromEnv(opts.workspaceRoot, process.env, opts.logger), (setupCache) => ({ setupCache })),
          packageStores: PackageStores.fromEnv(opts.workspaceRoot, process.env, opts.logger),
          ...opts.claude,
        });
  const holder = pool?.workerId ?? `webhooks:${process.pid}:${randomBytes(3).toString('hex')}`;
  const report = opts.queueReport ?? DEFAULT_QUEUE_REPORT;
  const reporter =
    role === 'workers' || report.intervalMs <= 0
      ? undefined
      : new QueueReporter({ ledger, queue, logger: opts.logger, auth, holder, intervalMs: report.intervalMs, refreshesPerMinute: report.refreshesPerMinute });
  const intake = createIntake({
    ledger,
    queue,
    logger: opts.logger,
    auth,
    holder,
    ...(opts.leaseMs ? { leaseMs: opts.leaseMs } : {}),
    onEnqueued: () => {
      pool?.kick();
      reporter?.soon();
    },
  });
  pool?.start();
  reporter?.start();
  // Another server that died mid-event leaves inbox entries behind: look for them now and then.
  const replay = role === 'workers' ? undefined : setInterval(() => void intake.replayInbox().catch((err: unknown) => opts.logger.warn({ err }, 'inbox replay failed')), INBOX_REPLAY_MS);
  replay?.unref();
  return {
    appFn: goalLoopApp((event) => intake.accept(event)),
    intake,
    pool,
    async resumeInterrupted() {
      const replayed = role === 'workers' ? 0 : await intake.replayInbox();
      // A sweep resumes what the sweep before it (a sweep interval ago) also found orphaned.
      return replayed + ((await pool?.sweep()) ?? 0);
    },
    async idle() {
      // Handling an event may queue work; work queues no events. So: events, then work.
      await intake.idle();
      await pool?.idle();
    },
    close: async (graceMs = 10_000) => {
      clearInterval(replay);
      await reporter?.stop();
      // Events being handled get the grace time too; what is left is replayed from the inbox.
      await Promise.all([pool?.close(graceMs), Promise.race([intake.idle(), new Promise((r) => setTimeout(r, graceMs).unref())])]);
    },
  };
}

/** What `serve` and `worker` share: the runtime's own options (tuning falls back to the env). */
export type AppServiceOptions = Pick<
  RuntimeOptions,
  'store' | 'workspaceRoot' | 'sandboxFor' | 'concurrency' | 'workerId' | 'leaseMs' | 'pollMs' | 'minUpdateIntervalMs' | 'controlPollMs' | 'queueReport'
> & {
  env?: NodeJS.ProcessEnv;
  /** Overrides for tests (appId, privateKey, secret, log, Octokit, request). */
  probotOverrides?: Parameters<typeof createProbot>[0];
};

/** A ready Probot (credentials from the environment) and the app's runtime in the given role, Claude included when configured. */
export async function createAppRuntime(opts: AppServiceOptions, role: RuntimeRole, logName: string): Promise<{ probot: Probot; runtime: GoalLoopRuntime; log: Logger; concurrency: number }> {
  const env = opts.env ?? process.env;
  // Every write of an installation takes a slot of the budget this store shares with all processes.
  const settings = serviceSettings(env, opts.store.ledger);
  const probot = createProbot({ env, ...opts.probotOverrides, overrides: { Octokit: settings.Octokit, ...opts.probotOverrides?.overrides } });
  await probot.ready(); // Probot 14 builds its logger and auth asynchronously
  const log = probot.log.child({ name: logName });
  const concurrency = opts.concurrency ?? settings.concurrency;
  const runtime = createRuntime({
    probot,
    store: opts.store,
    role,
    logger: log,
    workspaceRoot: opts.workspaceRoot,
    sandboxFor: opts.sandboxFor,
    concurrency,
    ...pick(opts.workerId, (workerId) => ({ workerId })),
    ...pick(opts.leaseMs ?? settings.leaseMs, (leaseMs) => ({ leaseMs })),
    ...pick(opts.pollMs ?? settings.pollMs, (pollMs) => ({ pollMs })),
    ...pick(opts.minUpdateIntervalMs ?? settings.minUpdateIntervalMs, (minUpdateIntervalMs) => ({ minUpdateIntervalMs })),
    ...pick(opts.controlPollMs, (controlPollMs) => ({ controlPollMs })),
    queueReport: opts.queueReport ?? settings.queueReport,
    claude: claudeHooks(env, log),
  });
  return { probot, runtime, log, concurrency };
}
