import type { Logger } from 'pino';
import { createProbot } from 'probot';
import type { RepoConfig } from '../config/repo-config.js';
import { claudeHooks } from '../github/claude-hooks.js';
import { createRuntime, type GoalLoopRuntime } from '../github/runtime.js';
import type { Store } from '../ledger/open-ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import { pick, serviceSettings } from './settings.js';

export interface WorkerOptions {
  store: Pick<Store, 'ledger' | 'queue'>;
  workspaceRoot: string;
  sandboxFor: (config: RepoConfig) => Promise<Sandbox>;
  env?: NodeJS.ProcessEnv;
  /** Overrides for tests (appId, privateKey, log, Octokit, request). */
  probotOverrides?: Parameters<typeof createProbot>[0];
  concurrency?: number;
  workerId?: string;
  leaseMs?: number;
  pollMs?: number;
  minUpdateIntervalMs?: number;
  controlPollMs?: number;
}

export interface RunningWorker {
  runtime: GoalLoopRuntime;
  log: Logger;
  workerId: string;
  close(graceMs?: number): Promise<void>;
}

/**
 * `goal-loop worker`: takes goal jobs from the shared queue and works them as the GitHub App
 * (installation tokens from APP_ID + PRIVATE_KEY); no HTTP server, no webhooks.
 */
export async function startWorker(opts: WorkerOptions): Promise<RunningWorker> {
  const env = opts.env ?? process.env;
  const settings = serviceSettings(env);
  const probot = createProbot({ env, ...opts.probotOverrides, overrides: { Octokit: settings.Octokit, ...opts.probotOverrides?.overrides } });
  await probot.ready(); // Probot 14 builds its logger and auth asynchronously
  const log = probot.log.child({ name: 'goal-loop-worker' });
  const runtime = createRuntime({
    probot,
    store: opts.store,
    role: 'workers',
    logger: log,
    workspaceRoot: opts.workspaceRoot,
    sandboxFor: opts.sandboxFor,
    concurrency: opts.concurrency ?? settings.concurrency,
    ...(opts.workerId ? { workerId: opts.workerId } : {}),
    ...pick(opts.leaseMs ?? settings.leaseMs, (leaseMs) => ({ leaseMs })),
    ...pick(opts.pollMs ?? settings.pollMs, (pollMs) => ({ pollMs })),
    ...pick(opts.minUpdateIntervalMs ?? settings.minUpdateIntervalMs, (minUpdateIntervalMs) => ({ minUpdateIntervalMs })),
    ...(opts.controlPollMs !== undefined ? { controlPollMs: opts.controlPollMs } : {}),
    claude: claudeHooks(env, log),
  });
  const workerId = runtime.pool!.workerId;
  const resumed = await runtime.resumeInterrupted();
  log.info({ workerId, resumed, concurrency: opts.concurrency ?? settings.concurrency }, 'goal-loop worker is running');
  return { runtime, log, workerId, close: (graceMs) => runtime.close(graceMs) };
}
