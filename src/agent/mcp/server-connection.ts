import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type CallToolResult, CallToolResultSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { childLogger } from '../../common/child-logger.js';
import type { McpServerConfig } from '../../config/repo-config.js';
import { canSpawn, type Sandbox, type SandboxProcess } from '../../ports/sandbox.js';
import { hostEnv } from '../../sandbox/host-env.js';
import { SandboxTransport } from './sandbox-transport.js';

export interface ConnectionDeps {
  sandbox: Sandbox;
  workspaceDir: string;
  goalId: string;
  logger: Logger;
  /** Where the host variables named in the config come from. */
  hostEnv: NodeJS.ProcessEnv;
  /** The server is killed after this long (the goal's wall-clock budget). */
  lifetimeMs: number;
  startTimeoutMs: number;
  callTimeoutMs: number;
  /** The server's stderr goes to `<logDir>/mcp-<name>.log`. */
  logDir?: string;
}

/** A tool call that cannot be made: the message goes back to the model as an error result. */
export class McpToolError extends Error {
  override name = 'McpToolError';
}

type State = 'idle' | 'ready' | 'suspended' | 'failed' | 'crashed' | 'closed';

/**
 * One repo-configured MCP server, started in the goal's sandbox over stdio. It never throws
 * out of `start`: a server that cannot start, crashes or answers garbage is only unavailable,
 * with a clear reason for the model and one log line.
 */
export class McpServerConnection {
  state: State = 'idle';
  tools: Tool[] = [];
  /** Why the server is unavailable (for the model and the log). */
  problem: string | undefined;
  starts = 0;
  /** Times it died on its own (a suspension is not a crash). */
  crashes = 0;
  private client: Client | undefined;
  private proc: SandboxProcess | undefined;
  private malformed: string | undefined;
  private readonly log: Logger;

  constructor(
    readonly config: McpServerConfig,
    private readonly deps: ConnectionDeps,
  ) {
    this.log = childLogger(deps.logger, { mcpServer: config.name, goal: deps.goalId });
  }

  async start(): Promise<void> {
    this.starts += 1;
    this.state = 'idle';
    this.problem = undefined;
    this.malformed = undefined;
    const { deps, config } = this;
    if (!canSpawn(deps.sandbox)) return this.fail('the sandbox cannot run long-lived processes');
    const env = hostEnv(config.env, deps.hostEnv);
    if (env.refused.length > 0)
      this.log.warn({ refused: env.refused, why: env.why }, "mcp_servers env names refused: the bot's own credentials and settings, and secret-looking names, never enter the sandbox");
    if (env.missing.length > 0) this.log.warn({ missing: env.missing }, 'mcp_servers env names not set on the host');
    try {
      const proc = await deps.sandbox.spawn({
        program: config.command,
        args: config.args,
        cwd: deps.workspaceDir,
        env: { GOAL_ID: deps.goalId },
        passEnv: env.env,
        lifetimeMs: deps.lifetimeMs,
        ...(deps.logDir ? { logPath: join(deps.logDir, `mcp-${config.name}.log`) } : {}),
      });
      this.proc = proc;
      void proc.exited.then((exit) => this.exited(proc, exit));
      const transport = new SandboxTransport(proc);
      transport.onerror = (err) => {
        this.malformed ??= err.message;
      };
      const client = new Client({ name: 'goal-loop', version: '1' }, { capabilities: {} });
      this.client = client;
      await client.connect(transport, { timeout: deps.startTimeoutMs });
      const tools: Tool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 20; page++) {
        const res = await client.listTools(cursor ? { cursor } : undefined, { timeout: deps.startTimeoutMs });
        tools.push(...res.tools);
        cursor = res.nextCursor;
        if (!cursor) break;
      }
      if (this.state !== 'idle') return; // it died while listing
      this.tools = tools;
      this.state = 'ready';
      this.log.info({ tools: tools.map((t) => t.name) }, 'MCP server started in the sandbox');
    } catch (err) {
      await this.fail(`failed to start: ${this.explain(err)}`);
    }
  }

  /** Calls one of the server's tools; throws McpToolError with a clear reason when it cannot. */
  async call(tool: string, args: unknown, signal: AbortSignal): Promise<CallToolResult> {
    if (this.state !== 'ready' || !this.client) throw new McpToolError(`MCP server "${this.config.name}" is unavailable: ${this.problem ?? this.state}`);
    try {
      return (await this.client.callTool({ name: tool, arguments: (args ?? {}) as Record<string, unknown> }, CallToolResultSchema, {
        timeout: this.deps.callTimeoutMs,
        signal,
      })) as CallToolResult;
    } catch (err) {
      if (signal.aborted) throw new McpToolError('not finished: the attempt was interrupted');
      await new Promise((r) => setImmediate(r)); // let an exit be noticed first
      if ((this.state as State) === 'crashed') throw new McpToolError(`MCP server "${this.config.name}" crashed while running ${tool}: ${this.problem}`);
      const why = this.explain(err);
      this.log.error({ tool, err: why }, 'MCP server tool call failed');
      if (/timed out/i.test(why)) throw new McpToolError(`MCP server "${this.config.name}" did not answer ${tool} within ${Math.round(this.deps.callTimeoutMs / 1000)}s`);
      throw new McpToolError(`MCP server "${this.config.name}" returned an invalid answer to ${tool}: ${why}`);
    }
  }

  /**
   * Stops a ready server but keeps its tools: `start` brings it back. The loop suspends servers
   * whenever a task command or the bot's own git is about to touch the workspace, so that no
   * jailed process ever runs beside either (and none can hand the other a writable handle).
   */
  async suspend(): Promise<void> {
    if (this.state !== 'ready') return;
    const { client, proc } = this;
    this.state = 'suspended';
    this.client = undefined;
    this.proc = undefined;
    await client?.close().catch(() => undefined);
    proc?.kill();
    await proc?.exited;
  }

  async close(): Promise<void> {
    const client = this.client;
    this.state = 'closed';
    this.client = undefined;
    await client?.close().catch(() => undefined);
    this.proc?.kill();
    await this.proc?.exited;
  }

  private exited(proc: SandboxProcess, exit: { code: number | null; signal: string | null }): void {
    if (proc !== this.proc || this.state === 'closed' || this.state === 'failed') return;
    const how = this.malformed ? `it ${this.malformed} and was stopped` : `it exited (${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal ?? 'unknown'}`})`;
    const stderr = proc.stderrTail().trim();
    this.problem = `${how}${stderr ? `; its last stderr: ${lastLines(stderr)}` : ''}`;
    if (this.state === 'ready') {
      this.state = 'crashed';
      this.crashes += 1;
      this.log.error({ code: exit.code, signal: exit.signal, stderr: lastLines(stderr) }, 'MCP server crashed');
    }
  }

  private async fail(reason: string): Promise<void> {
    // The exit, if it is one, may still be on its way: its stderr says most.
    if (this.proc) await Promise.race([this.proc.exited, new Promise((r) => setTimeout(r, 200))]);
    const stderr = this.proc?.stderrTail().trim();
    this.state = 'failed';
    this.problem = `${reason}${stderr ? `; its stderr: ${lastLines(stderr)}` : ''}`;
    this.log.error({ problem: this.problem }, 'MCP server unavailable');
    this.proc?.kill();
  }

  private explain(err: unknown): string {
    if (this.malformed) return this.malformed;
    return (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300);
  }
}

function lastLines(text: string, max = 600): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}
