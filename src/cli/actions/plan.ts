import { readFile } from 'node:fs/promises';
import { UsageError } from '../../common/errors.js';
import { extractGoalBlock, loadGoalSpecFile, parseGoalSpec, SpecValidationError } from '../../goal/parse.js';
import { mermaidGraph, orderedChecklist } from '../../goal/render.js';
import type { GoalSpec } from '../../goal/schema.js';
import { verificationFlags } from '../../goal/verification-lint.js';
import { loadRepoConfigForCli } from '../../run/load-repo-config.js';

export interface PlanValues {
  repo?: string;
  goal?: string;
  issue?: string;
  config?: string;
  json?: boolean;
}

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
      // Loaded only here: the Anthropic SDK and the planner, for an issue Claude must plan.
      const [{ planIssueWithClaude, plannerExitCode }, { PlannerError }] = await Promise.all([import('../plan-with-claude.js'), import('../../agent/index.js')]);
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
  // A verification that cannot fail is legal but proves nothing: said, not refused.
  for (const flag of verificationFlags(spec)) process.stderr.write(`goal-loop: warning: ${flag}\n`);
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
