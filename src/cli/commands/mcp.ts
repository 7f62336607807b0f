import type { McpValues } from '../actions/mcp.js';
import { type CliCommand, repeatable } from '../cli-command.js';

export const MCP: CliCommand = {
  name: 'mcp',
  summary: 'serve the goal loop over MCP on stdio, for an agent',
  description:
    "Serves the goal loop over MCP on stdio for an external agent (Claude Code, an IDE agent): tools goal_plan, goal_start, next_task, task_complete, goal_status, goal_config; resources goal://<goal_id>/ledger, goal://<goal_id>/attempts and goal://<goal_id>/spec. Same workspace, branch, checkpoints and ledger as `run` (DATABASE_URL's PostgreSQL when set, else GOAL_LOOP_DB or your own). --approve pre-approves risky tasks; other approvals ask the human.",
  example: 'claude mcp add goal-loop -- goal-loop mcp --repo /path/to/repo   # after npm install -g .',
  define: (cmd) =>
    cmd
      .option('--repo <path|url>', 'the repository goal_start uses when the client names none (default: the working directory)')
      .option('--config <goal-loop.yml>', "the repo config (default: .github/goal-loop.yml on the repository's base branch)")
      .option('--approve <task-id|all>', 'pre-approve a risky task, or all of them; repeatable', repeatable),
  run: async (cmd) => (await import('../actions/mcp.js')).mcpCommand(cmd.opts<McpValues>()),
};
