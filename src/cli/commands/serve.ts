import { parseArgs } from 'node:util';
import { run } from 'probot';
import { createLogger } from '../../logging.js';
import { GoalLoopOctokit } from '../../github/octokit.js';
import { EXIT } from '../../loop/result.js';
import { startServer, webhookSecretProblem } from '../../server/serve.js';
import { runService } from '../service.js';

export const SERVE_USAGE = `goal-loop serve

  Starts the GitHub App: webhooks at WEBHOOK_PATH (default /api/github/webhooks) and GET /health.
  Embedded (no DATABASE_URL): the same process works the goals (GOAL_LOOP_CONCURRENCY at once)
  from a queue in the SQLite ledger. Scale-out (DATABASE_URL=postgres://...): webhooks only;
  run \`goal-loop worker\` processes for the work. Needs APP_ID, PRIVATE_KEY (or
  PRIVATE_KEY_PATH) and WEBHOOK_SECRET; without APP_ID and the key it starts Probot's setup
  flow, which registers the app from app.yml. With them but no WEBHOOK_SECRET it refuses (exit 1).`;

export async function serveCommand(argv: string[]): Promise<number> {
  parseArgs({ args: argv, options: {}, strict: true, allowPositionals: false });
  const env = process.env;
  const logger = createLogger(env.LOG_LEVEL ?? 'info');
  if (!env.APP_ID || !(env.PRIVATE_KEY || env.PRIVATE_KEY_PATH)) {
    logger.warn('APP_ID or PRIVATE_KEY is not set: starting the setup flow (open the printed URL to register the app from app.yml)');
    // In setup mode Probot serves only its registration pages; restart once it has written .env.
    await run(() => undefined, { env, Octokit: GoalLoopOctokit });
    return new Promise<number>(() => undefined); // the setup server runs until the process is stopped
  }
  const secretProblem = webhookSecretProblem(env.WEBHOOK_SECRET);
  if (secretProblem) {
    // One line, no usage text: the fix is in the environment, not the command line.
    process.stderr.write(`goal-loop: serve refuses to start: ${secretProblem}\n`);
    return EXIT.badInput;
  }
  return runService(
    env,
    logger,
    (common) => startServer({ ...common, role: common.store.kind === 'postgres' ? 'webhooks' : 'both' }),
    'shutting down: no new work; running goals get 10 s, then another worker (or the next start) resumes them',
  );
}

