import { parseArgs } from 'node:util';
import { run } from 'probot';
import { openLedger } from '../../ledger/open-ledger.js';
import { createLogger } from '../../logging.js';
import { GoalLoopOctokit } from '../../github/octokit.js';
import { selectSandbox } from '../../sandbox/select-sandbox.js';
import { startServer } from '../../server/serve.js';
import { workspaceRoot } from '../paths.js';

export const SERVE_USAGE = `goal-loop serve

  Starts the GitHub App: webhooks at WEBHOOK_PATH (default /api/github/webhooks), GET /health,
  and the goal worker. Needs APP_ID, PRIVATE_KEY (or PRIVATE_KEY_PATH) and WEBHOOK_SECRET;
  without them it starts Probot's setup flow, which registers the app from app.yml.`;

export async function serveCommand(argv: string[]): Promise<number> {
  parseArgs({ args: argv, options: {}, strict: true, allowPositionals: false });
  const env = process.env;
  const ledger = openLedger(env);
  const logger = createLogger(env.LOG_LEVEL ?? 'info');
  const sandboxFor = (config: { sandbox: 'bwrap' | 'process' }) => selectSandbox({ mode: config.sandbox, logger });
  if (!env.APP_ID || !(env.PRIVATE_KEY || env.PRIVATE_KEY_PATH)) {
    logger.warn('APP_ID or PRIVATE_KEY is not set: starting the setup flow (open the printed URL to register the app from app.yml)');
    // In setup mode Probot serves only its registration pages; restart once it has written .env.
    await run(() => undefined, { env, Octokit: GoalLoopOctokit });
    return new Promise<number>(() => undefined); // the setup server runs until the process is stopped
  }
  const running = await startServer({ ledger, workspaceRoot: workspaceRoot(env), sandboxFor, env });
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  running.log.info('shutting down: no new work; running goals get 10 s, then resume on the next start');
  await running.close();
  await ledger.close();
  return 0;
}
