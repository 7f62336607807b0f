import { UsageError } from '../../common/errors.js';
import { startWorker } from '../../github/server/work.js';
import { type CliCommand, wholeNumberFrom1 } from '../cli-command.js';
import { loadDotEnv, missingAppCredentials } from '../dotenv.js';
import { createLogger } from '../logging.js';
import { runService } from '../service.js';

export const WORKER: CliCommand = {
  name: 'worker',
  summary: 'work goals from the shared queue (scale-out)',
  description:
    'Works goals from the shared queue (scale-out: DATABASE_URL=postgres://...; or several processes on one host sharing the SQLite GOAL_LOOP_DB). Each goal is held under a lease with a heartbeat; if a worker dies, another resumes its goals from their last checkpoint. Needs APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH), from the environment or ./.env.',
  example: 'DATABASE_URL=postgres://goal-loop@db/goal_loop goal-loop worker --concurrency 4',
  define: (cmd) => cmd.option('--concurrency <n>', 'goals worked at once (default: GOAL_LOOP_CONCURRENCY)', wholeNumberFrom1('--concurrency')),
  run: (cmd) => workerCommand(cmd.opts<{ concurrency?: number }>()),
};

export async function workerCommand({ concurrency }: { concurrency?: number }): Promise<number> {
  const env = process.env;
  loadDotEnv(process.cwd(), env); // the credentials the setup flow wrote; the environment wins
  if (missingAppCredentials(env).length > 0) {
    throw new UsageError('goal-loop worker needs APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH) to act as the GitHub App');
  }
  const logger = createLogger(env.LOG_LEVEL ?? 'info');
  return runService(
    env,
    logger,
    (common) => startWorker({ ...common, ...(concurrency ? { concurrency } : {}), probotOverrides: { overrides: { log: logger } } }),
    'shutting down: no new work; running goals get 10 s, then another worker resumes them',
  );
}
