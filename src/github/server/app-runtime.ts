import type { Logger } from 'pino';
import { createProbot, type Probot } from 'probot';
import { claudeHooks } from '../claude-hooks.js';
import { createRuntime, type GoalLoopRuntime, type RuntimeOptions } from '../runtime.js';
import { pick, serviceSettings } from './settings.js';

/** What `serve` and `worker` share: the runtime's own options (tuning falls back to the env). */
export type AppServiceOptions = Pick<
  RuntimeOptions,
  'store' | 'workspaceRoot' | 'sandboxFor' | 'concurrency' | 'workerId' | 'leaseMs' | 'pollMs' | 'minUpdateIntervalMs' | 'controlPollMs'
> & {
  env?: NodeJS.ProcessEnv;
  /** Overrides for tests (appId, privateKey, secret, log, Octokit, request). */
  probotOverrides?: Parameters<typeof createProbot>[0];
};

/** A ready Probot (credentials from the environment) and the app's runtime in the given role. */
export async function createAppRuntime(
  opts: AppServiceOptions,
  role: NonNullable<RuntimeOptions['role']>,
  logName: string,
): Promise<{ probot: Probot; runtime: GoalLoopRuntime; log: Logger; concurrency: number }> {
  const env = opts.env ?? process.env;
  const settings = serviceSettings(env);
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
    claude: claudeHooks(env, log),
  });
  return { probot, runtime, log, concurrency };
}
