import { InvalidArgumentError, Option } from 'commander';
import type { AgentChoice } from '../../agent/select-agent.js';
import type { RunValues } from '../actions/run.js';
import { type CliCommand, repeatable } from '../cli-command.js';

export const RUN: CliCommand = {
  name: 'run',
  summary: 'work a goal on a repository, one checkpoint per task',
  description: [
    'Clones --repo into a private workspace, works on branch goal/<goal_id> and pushes every verified task to it as a checkpoint. Running it again resumes from the checkpoints. The repo config is --config, else .github/goal-loop.yml on the base branch.',
    "--budget sets the goal's cost cap, as /goal budget does in the App: recorded in the ledger, it holds for this run and the later ones, so a goal its cap stopped goes on. The ledger is DATABASE_URL's PostgreSQL when set, else GOAL_LOOP_DB (or your own).",
  ].join('\n\n'),
  example: 'goal-loop run --repo ./my-app --goal goals/auth-migration.yml --base main --approve task-03 --budget 25',
  define: (cmd) =>
    cmd
      .requiredOption('--repo <path|url>', 'the repository: a local path or a git URL')
      .requiredOption('--goal <file>', 'the goal spec: YAML, JSON, or markdown with a ```goal block')
      .addOption(
        new Option('--agent <agent>', "scripted: the tasks' run steps only; claude; auto: claude if a model is configured (ANTHROPIC_API_KEY, or GOAL_LOOP_PROVIDER=bedrock|vertex with its settings)")
          .choices(['auto', 'scripted', 'claude'] satisfies AgentChoice[])
          .default('auto'),
      )
      .option('--json', 'print the LoopResult as one JSON line on stdout')
      .option('--base <branch>', "the branch the goal starts from (default: the remote's HEAD)")
      .option('--approve <task-id|all>', 'approve a risky task, or all of them; repeatable', repeatable)
      .option('--config <goal-loop.yml>', 'the repo config (default: .github/goal-loop.yml on the base branch)')
      .option(
        '--follow-base',
        "bring the goal branch onto its base branch's tip first, when the base moved (the repo config's follow_base: rebase or merge); each replayed task's verification runs again",
      )
      .option('--budget <usd>', "set the goal's cost cap in US dollars, kept in the ledger (as /goal budget): goes on after the cap stopped it", budgetUsd),
  run: async (cmd) => (await import('../actions/run.js')).runGoalCommand(cmd.opts<RunValues>()),
};

function budgetUsd(raw: string): number {
  const usd = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(usd) || usd < 0) throw new InvalidArgumentError('--budget needs an amount in US dollars, e.g. --budget 15.');
  return usd;
}
