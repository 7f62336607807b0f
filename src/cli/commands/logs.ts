import type { LogsValues } from '../actions/logs.js';
import { type CliCommand, wholeNumberFrom1 } from '../cli-command.js';

export const LOGS: CliCommand = {
  name: 'logs',
  summary: 'what each attempt of a goal did (--follow: as it goes)',
  description:
    "What each attempt of a goal did, from the ledger (the record the check run shows): its run steps, the agent's turns and tool calls, the verification, the checkpoint and why it ended. --follow keeps printing as the goal goes, whichever process or worker runs it, until it rests.",
  example: 'goal-loop logs demo-slugify --task slug-tests',
  define: (cmd) =>
    cmd
      .argument('<goal-id>', 'the goal, as `goal-loop status` lists it')
      .option('--repo <repo>', 'the repository, when goals on several have this id (as `status` lists it)')
      .option('--task <id>', "only this task's attempts")
      .option('--attempt <n>', 'only attempt N (of each task shown)', wholeNumberFrom1('--attempt'))
      .option('--follow', 'keep printing as the goal goes (any process or worker), until it rests')
      .option('--json', 'one JSON object per entry and line: {seq, at, taskId, attempt, entry}'),
  run: async (cmd) => (await import('../actions/logs.js')).logsCommand(cmd.processedArgs[0] as string, cmd.opts<LogsValues>()),
};
