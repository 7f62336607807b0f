import { type CliCommand, wholeNumberFrom1 } from '../cli-command.js';

export const WORKER: CliCommand = {
  name: 'worker',
  summary: 'work goals from the shared queue (scale-out)',
  description:
    'Works goals from the shared queue (scale-out: DATABASE_URL=postgres://...; or several processes on one host sharing the SQLite GOAL_LOOP_DB). Each goal is held under a lease with a heartbeat; if a worker dies, another resumes its goals from their last checkpoint. Needs APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH), from the environment or ./.env.',
  example: 'DATABASE_URL=postgres://goal-loop@db/goal_loop goal-loop worker --concurrency 4',
  define: (cmd) => cmd.option('--concurrency <n>', 'goals worked at once (default: GOAL_LOOP_CONCURRENCY)', wholeNumberFrom1('--concurrency')),
  run: async (cmd) => (await import('../actions/worker.js')).workerCommand(cmd.opts<{ concurrency?: number }>()),
};
