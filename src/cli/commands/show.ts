import type { ShowValues } from '../actions/show.js';
import type { CliCommand } from '../cli-command.js';

export const SHOW: CliCommand = {
  name: 'show',
  summary: "a goal's branch: its commits, their trailers, its diffstat",
  description:
    "Shows a goal's branch on its repository (from the ledger): where it left the default branch, each commit with its Goal-Task, Goal-Attempt and Goal-Verified trailers, and the diffstat of the whole branch. The repository is read as a remote, into a scratch repository of goal-loop's own: none of its config is obeyed.",
  example: 'goal-loop show demo-slugify',
  define: (cmd) =>
    cmd
      .argument('<goal-id>', 'the goal, as `goal-loop status` lists it')
      .option('--repo <repo>', 'the repository, when goals on several have this id (as `status` lists it)')
      .option('--json', 'one JSON object: {goal_id, repo, state, branch, pushed, base, commits, commits_total, diffstat}'),
  run: async (cmd) => (await import('../actions/show.js')).showCommand(cmd.processedArgs[0] as string, cmd.opts<ShowValues>()),
};
