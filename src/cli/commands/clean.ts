import type { CleanValues } from '../actions/clean.js';
import type { CliCommand } from '../cli-command.js';

export const CLEAN: CliCommand = {
  name: 'clean',
  summary: 'remove workspaces (--all: the caches too), say what it freed',
  description:
    "Removes the workspaces under GOAL_LOOP_WORKSPACES: one goal's, every finished goal's (complete, escalated, stopped or failed), or all of them, and with --all the caches too (mirrors, parked trees, the setup cache, the package stores). A goal's checkpoints are on its branch: a later run prepares a new workspace from it. A workspace whose goal is running (its lock is held, its lease is live, or for the App's the ledger says it runs) is kept, and nothing outside goal-loop's folders is touched (symlinks are not followed).",
  example: 'goal-loop clean --finished',
  usage: '(<goal-id> | --finished | --all)',
  define: (cmd) =>
    cmd
      .argument('[goal-id]', 'the goal whose workspace goes, as `goal-loop status` lists it')
      .option('--finished', 'the workspaces of every finished goal (complete, escalated, stopped, failed)')
      .option('--all', 'every workspace not in use, and the mirrors, parked trees, setup cache and package stores'),
  run: async (cmd) => (await import('../actions/clean.js')).cleanCommand(cmd.processedArgs[0] as string | undefined, cmd.opts<CleanValues>()),
};
