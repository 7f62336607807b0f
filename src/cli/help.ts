import { DEMO_USAGE } from './commands/demo.js';
import { LOGS_USAGE } from './commands/logs.js';
import { MCP_USAGE } from './commands/mcp.js';
import { PLAN_USAGE } from './commands/plan.js';
import { RUN_USAGE } from './commands/run.js';
import { SERVE_USAGE } from './commands/serve.js';
import { STATUS_USAGE } from './commands/status.js';
import { WORKER_USAGE } from './commands/worker.js';

/** What `goal-loop <command> --help` prints: the command's usage, one line per flag, an example. */
export interface CommandHelp {
  usage: string;
  /** `[flag as written, one-line meaning]`, in the order of the usage line. */
  flags: Array<[string, string]>;
  example: string;
}

const COMMON: Array<[string, string]> = [
  ['-h, --help', 'print this help and exit (the command does not start)'],
  ['-V, --version', 'print the goal-loop version and exit'],
];

export const COMMAND_HELP: Record<string, CommandHelp> = {
  run: {
    usage: RUN_USAGE,
    flags: [
      ['--repo <path|url>', 'the repository: a local path or a git URL (required)'],
      ['--goal <file>', 'the goal spec: YAML, JSON, or markdown with a ```goal block (required)'],
      ['--agent auto|scripted|claude', 'scripted: the tasks\' run steps only; claude; auto (default): claude if ANTHROPIC_API_KEY is set'],
      ['--json', 'print the LoopResult as one JSON line on stdout'],
      ['--base <branch>', 'the branch the goal starts from (default: the remote\'s HEAD)'],
      ['--approve <task-id|all>', 'approve a risky task, or all of them; repeatable'],
      ['--config <goal-loop.yml>', 'the repo config (default: .github/goal-loop.yml on the base branch)'],
      ['--budget <usd>', 'set the goal\'s cost cap in US dollars, kept in the ledger (as /goal budget): goes on after the cap stopped it'],
    ],
    example: 'goal-loop run --repo ./my-app --goal goals/auth-migration.yml --base main --approve task-03 --budget 25',
  },
  plan: {
    usage: PLAN_USAGE,
    flags: [
      ['--repo <path|url>', 'the repository Claude reads to plan an issue without a goal block'],
      ['--goal <file>', 'a goal spec to validate: YAML, JSON, or markdown with a ```goal block'],
      ['--issue <file.md>', 'an issue body: its ```goal block, else Claude plans it (needs ANTHROPIC_API_KEY, --repo)'],
      ['--config <goal-loop.yml>', 'the repo config, checked; Claude plans with its model and cost cap (default: .github/goal-loop.yml at --repo\'s HEAD)'],
      ['--json', 'print the normalized spec as JSON instead of the checklist'],
    ],
    example: 'goal-loop plan --goal examples/demo-goal.yml',
  },
  status: {
    usage: STATUS_USAGE,
    flags: [['--json', 'print the goals as a JSON array']],
    example: 'GOAL_LOOP_DB=/srv/goal-loop/ledger.db goal-loop status --json',
  },
  logs: {
    usage: LOGS_USAGE,
    flags: [
      ['--repo <repo>', 'the repository, when goals on several have this id (as `status` lists it)'],
      ['--task ID', 'only this task\'s attempts'],
      ['--attempt N', 'only attempt N (of each task shown)'],
      ['--follow', 'keep printing as the goal goes (any process or worker), until it rests'],
      ['--json', 'one JSON object per entry and line: {seq, at, taskId, attempt, entry}'],
    ],
    example: 'goal-loop logs demo-slugify --task slug-tests',
  },
  serve: {
    usage: SERVE_USAGE,
    flags: [],
    example: 'APP_ID=12345 PRIVATE_KEY_PATH=./app.pem WEBHOOK_SECRET=change-me goal-loop serve',
  },
  worker: {
    usage: WORKER_USAGE,
    flags: [['--concurrency N', 'goals worked at once (default: GOAL_LOOP_CONCURRENCY)']],
    example: 'DATABASE_URL=postgres://goal-loop@db/goal_loop goal-loop worker --concurrency 4',
  },
  mcp: {
    usage: MCP_USAGE,
    flags: [
      ['--repo <path|url>', 'the repository goal_start uses when the client names none (default: the working directory)'],
      ['--config <goal-loop.yml>', 'the repo config (default: .github/goal-loop.yml on the repository\'s base branch)'],
      ['--approve <task-id|all>', 'pre-approve a risky task, or all of them; repeatable'],
    ],
    example: 'claude mcp add goal-loop -- goal-loop mcp --repo /path/to/repo   # after npm install -g .',
  },
  demo: {
    usage: DEMO_USAGE,
    flags: [],
    example: 'goal-loop demo',
  },
};

export function commandHelp(name: string): string {
  const help = COMMAND_HELP[name];
  if (!help) throw new Error(`no help for command "${name}"`);
  const rows = [...help.flags, ...COMMON];
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2;
  return `${help.usage}\n\nOptions:\n${rows.map(([flag, meaning]) => `  ${flag.padEnd(width)}${meaning}`).join('\n')}\n\nExample:\n  ${help.example}\n`;
}

export const OVERVIEW = `usage: goal-loop <command> [options]
       goal-loop <command> --help    a command's options and an example
       goal-loop --version           the version

${Object.values(COMMAND_HELP)
  .map((h) => h.usage)
  .join('\n\n')}

Exit codes: 0 complete, 1 bad input or usage, 2 escalated, 3 stopped (by a safeguard, a human or Ctrl-C),
paused, or waiting for an approval, 4 internal error (the goal FAILED), 130 a second Ctrl-C.

Example:
  goal-loop plan --goal examples/demo-goal.yml
`;
