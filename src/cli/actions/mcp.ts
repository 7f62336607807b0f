import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { openStore } from '../../ledger/open-ledger.js';
import { createGoalLoopMcpServer } from '../../mcp/mcp-server.js';
import { normalizeRepo } from '../../run/paths.js';
import { createLogger } from '../logging.js';
import { packageVersion } from '../version.js';

export interface McpValues {
  repo?: string;
  config?: string;
  approve?: string[];
}

export async function mcpCommand(values: McpValues): Promise<number> {
  const store = await openStore(process.env, { checkpoints: 'background' }); // a server, as `serve`
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
