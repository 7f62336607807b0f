import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { openStore } from '../../ledger/open-ledger.js';
import { createGoalLoopMcpServer } from '../../mcp/mcp-server.js';
import { normalizeRepo } from '../../run/paths.js';
import { type CliCommand, repeatable } from '../cli-command.js';
import { createLogger } from '../logging.js';
import { packageVersion } from '../version.js';

interface McpValues {
  repo?: string;
  config?: string;
  approve?: string[];
}

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
  run: (cmd) => mcpCommand(cmd.opts<McpValues>()),
};

export async function mcpCommand(values: McpValues): Promise<number> {
  const store = await openStore();
  const { ledger } = store;
  const logger = createLogger();
  const { server, sessions } = createGoalLoopMcpServer({
    ledger,
    logger,
    version: versionOrUnknown(),
    ...(values.repo ? { repo: normalizeRepo(values.repo) } : {}),
    ...(values.config ? { configFile: values.config } : {}),
    ...(values.approve ? { approve: values.approve } : {}),
  });
  try {
    await server.connect(new StdioServerTransport());
    logger.info('goal-loop MCP server ready on stdio');
    // Serve until the client goes away (stdin closes) or we are told to stop.
    await new Promise<void>((resolve) => {
      server.server.onclose = resolve;
      process.stdin.once('end', resolve);
      process.stdin.once('close', resolve);
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    return 0;
  } finally {
    // Running goals pause (their attempt is rolled back); the next goal_start resumes them. With
    // stdin gone nothing else holds the event loop, and Node would exit mid-pause: hold it.
    const hold = setInterval(() => undefined, 1000);
    await sessions.closeAll().finally(() => clearInterval(hold));
    await server.close().catch(() => undefined);
    await store.close();
  }
}

function versionOrUnknown(): string {
  try {
    return packageVersion();
  } catch {
    return '0.0.0';
  }
}
