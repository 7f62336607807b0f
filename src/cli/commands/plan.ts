import type { PlanValues } from '../actions/plan.js';
import type { CliCommand } from '../cli-command.js';

export const PLAN: CliCommand = {
  name: 'plan',
  summary: 'check a goal spec (or plan an issue) and print its tasks',
  description:
    "Validates a goal spec (or the ```goal block of an issue) and prints the ordered checklist and the task graph as mermaid. --json prints the normalized spec instead. An issue without a goal block is planned by Claude from --repo, with the repo config's model and cost cap.",
  example: 'goal-loop plan --goal examples/demo-goal.yml',
  usage: '[--repo <path|url>] (--goal <file> | --issue <file.md>) [--config <goal-loop.yml>] [--json]',
  define: (cmd) =>
    cmd
      .option('--repo <path|url>', 'the repository Claude reads to plan an issue without a goal block')
      .option('--goal <file>', 'a goal spec to validate: YAML, JSON, or markdown with a ```goal block')
      .option('--issue <file.md>', 'an issue body: its ```goal block, else Claude plans it (needs a model: ANTHROPIC_API_KEY or GOAL_LOOP_PROVIDER=bedrock|vertex; and --repo)')
      .option('--config <goal-loop.yml>', "the repo config, checked; Claude plans with its model and cost cap (default: .github/goal-loop.yml at --repo's HEAD)")
      .option('--json', 'print the normalized spec as JSON instead of the checklist'),
  run: async (cmd) => (await import('../actions/plan.js')).planCommand(cmd.opts<PlanValues>()),
};
