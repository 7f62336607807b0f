import type { Logger } from 'pino';
import { type AppServiceOptions, createAppRuntime, type GoalLoopRuntime } from '../runtime.js';

export type WorkerOptions = AppServiceOptions;

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
  const { runtime, log, concurrency } = await createAppRuntime(opts, 'workers', 'goal-loop-worker');
  const workerId = runtime.pool!.workerId;
  const resumed = await runtime.resumeInterrupted();
  log.info({ workerId, resumed, concurrency }, 'goal-loop worker is running');
  return { runtime, log, workerId, close: (graceMs) => runtime.close(graceMs) };
}
