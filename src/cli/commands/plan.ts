import { readFile } from 'node:fs/promises';
import { PlannerError } from '../../agent/index.js';
import { UsageError } from '../../common/errors.js';
import { extractGoalBlock, loadGoalSpecFile, parseGoalSpec, SpecValidationError } from '../../goal/parse.js';
import { mermaidGraph, orderedChecklist } from '../../goal/render.js';
import type { GoalSpec } from '../../goal/schema.js';
import { loadRepoConfigForCli } from '../../run/load-repo-config.js';
import type { CliCommand } from '../cli-command.js';
import { planIssueWithClaude, plannerExitCode } from '../plan-with-claude.js';

interface PlanValues {
  repo?: string;
  goal?: string;
  issue?: string;
  config?: string;
  json?: boolean;
}

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
      .option('--issue <file.md>', 'an issue body: its ```goal block, else Claude plans it (needs ANTHROPIC_API_KEY, --repo)')
      .option('--config <goal-loop.yml>', "the repo config, checked; Claude plans with its model and cost cap (default: .github/goal-loop.yml at --repo's HEAD)")
      .option('--json', 'print the normalized spec as JSON instead of the checklist'),
  run: (cmd) => planCommand(cmd.opts<PlanValues>()),
};

export async function planCommand(values: PlanValues): Promise<number> {
  if (!values.goal === !values.issue) throw new UsageError('plan: give exactly one of --goal <file> or --issue <file.md>');
  // A --config file is checked whatever the source of the plan, as `run` would check it.
  if (values.config) await loadRepoConfigForCli(values.repo ?? '', 'HEAD', values.config);
  let spec: GoalSpec;
  if (values.goal) {
    spec = await loadGoalSpecFile(values.goal);
  } else {
    const path = values.issue!;
    const text = await readFile(path, 'utf8').catch(() => {
      throw new SpecValidationError(path, [{ path: '', message: 'file not found' }]);
    });
    if (extractGoalBlock(text) === undefined) {
      try {
        const planned = await planIssueWithClaude(text, path, values.repo, values.config);
        spec = planned.spec;
        process.stderr.write(`Claude wrote this plan for $${planned.costUsd.toFixed(4)}; review it before you run it.\n`);
      } catch (err) {
        if (!(err instanceof PlannerError)) throw err;
        process.stderr.write(`goal-loop: the planner could not write a valid plan (${err.kind}):\n${err.errors.map((e) => `  ${e}`).join('\n')}\n`);
        return plannerExitCode(err);
      }
    } else {
      spec = parseGoalSpec(text, { source: path });
    }
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(spec, null, 2)}\n`);
    return 0;
  }
  const checks = spec.acceptance_criteria.map((c) => `- ${c.description}${c.check ? `  [check: ${c.check}]` : ''}`);
  process.stdout.write(
    [
      `goal: ${spec.goal_id}`,
      `objective: ${spec.objective}`,
      '',
      'tasks, in order:',
      orderedChecklist(spec.tasks),
      ...(checks.length > 0 ? ['', 'acceptance criteria:', ...checks] : []),
      '',
      '```mermaid',
      mermaidGraph(spec.tasks),
      '```',
      '',
    ].join('\n'),
  );
  return 0;
}
