import { UsageError } from '../../common/errors.js';
import { startWorker } from '../../github/server/work.js';

import { loadDotEnv, missingAppCredentials } from '../dotenv.js';
import { createLogger } from '../logging.js';
import { runService } from '../service.js';

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
