import type { CliCommand } from '../cli-command.js';

export const DEMO: CliCommand = {
  name: 'demo',
  summary: 'the demo goal on a fresh sample repository, no API key',
  description:
    'Runs the bundled goal (examples/demo-goal.yml: four tasks, one repaired on its second attempt) end to end on a fresh sample repository, with the scripted agent: no API key, no database server. It keeps the repository, its own ledger and the workspaces in one temporary folder, and prints the commands that show the checkpoints and each attempt, and how to delete it.',
  example: 'goal-loop demo',
  define: () => undefined,
  run: async () => (await import('../actions/demo.js')).demoCommand(),
};
