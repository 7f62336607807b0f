import type { CliCommand } from '../cli-command.js';

export const SERVE: CliCommand = {
  name: 'serve',
  summary: 'start the GitHub App (webhooks, and workers when embedded)',
  description: [
    'Starts the GitHub App: webhooks at WEBHOOK_PATH (default /api/github/webhooks) and GET /health. Embedded (no DATABASE_URL): the same process works the goals (GOAL_LOOP_CONCURRENCY at once) from a queue in the SQLite ledger. Scale-out (DATABASE_URL=postgres://...): webhooks only; run `goal-loop worker` processes for the work.',
    "Needs APP_ID, PRIVATE_KEY (or PRIVATE_KEY_PATH) and WEBHOOK_SECRET, from the environment or ./.env (the environment wins). Without APP_ID and the key it starts Probot's setup flow, which registers the app from app.yml and writes .env (not with NODE_ENV=production: then it refuses, exit 1). With them but no WEBHOOK_SECRET it refuses (exit 1).",
  ].join('\n\n'),
  example: 'APP_ID=12345 PRIVATE_KEY_PATH=./app.pem WEBHOOK_SECRET=change-me goal-loop serve',
  define: () => undefined,
  run: async () => (await import('../actions/serve.js')).serveCommand(),
};
