import { parseArgs, type ParseArgsConfig } from 'node:util';
import { createLogger } from '../logging.js';
import { startWorker } from '../../github/server/work.js';
import { UsageError } from '../../common/errors.js';
import { loadDotEnv, missingAppCredentials } from '../dotenv.js';
import { runService } from '../service.js';

export const WORKER_USAGE = `goal-loop worker [--concurrency N]

  Works goals from the shared queue (scale-out: DATABASE_URL=postgres://...; or several
  processes on one host sharing the SQLite GOAL_LOOP_DB). Each goal is held under a lease with
  a heartbeat; if a worker dies, another resumes its goals from their last checkpoint.
  Needs APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH), from the environment or ./.env.
  --concurrency overrides GOAL_LOOP_CONCURRENCY.`;

/** The flags `worker` accepts (its --help lists each one). */
export const WORKER_OPTIONS = { concurrency: { type: 'string' } } as const satisfies NonNullable<ParseArgsConfig['options']>;

export async function workerCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: WORKER_OPTIONS, strict: true, allowPositionals: false });
  const env = process.env;
  let concurrency: number | undefined;
  if (values.concurrency !== undefined) {
    concurrency = Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency must be a whole number of at least 1, not "${values.concurrency}"`);
  }
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
