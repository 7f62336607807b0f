import type { CliCommand } from '../cli-command.js';

export const STATUS: CliCommand = {
  name: 'status',
  summary: "the ledger's goals: state, progress, budget, queue",
  description:
    "Lists the goals in the ledger (GOAL_LOOP_DB, DATABASE_URL, or your own: ~/.local/state/goal-loop/ledger.db) with their state, progress and budget, whether each is queued or leased (by which worker, and how old its heartbeat is), and the effects still pending on GitHub (a comment, a label, a ready PR) with the oldest one's age, and those given up after their last try (with why).",
  example: 'GOAL_LOOP_DB=/srv/goal-loop/ledger.db goal-loop status --json',
  define: (cmd) => cmd.option('--json', 'print the goals as a JSON array'),
  run: async (cmd) => (await import('../actions/status.js')).statusCommand(cmd.opts<{ json?: boolean }>()),
};
