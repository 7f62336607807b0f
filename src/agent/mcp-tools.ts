import type { ToolDefinition } from './model.js';
import type { ToolOutcome } from './tools.js';

/** Prefix of the tools that come from repo-configured MCP servers: `mcp__<server>__<tool>`. */
export const MCP_PREFIX = 'mcp__';

/**
 * Tools beyond the built-in ones, offered to the agent next to them: those of the repo's
 * MCP servers (see src/agent/mcp). Started for the goal, stopped with `close`.
 */
export interface ExternalToolSource {
  /** Makes the tools ready for this workspace (starts the servers once; restarts crashed ones). */
  prepare(workspaceDir: string, goalId: string): Promise<void>;
  /** The definitions of the tools a task may use. */
  definitions(allowed: (name: string) => boolean): ToolDefinition[];
  /** Servers that are unavailable, one line each, for the task prompt. */
  notices(): string[];
  /** Calls a tool; every failure comes back as an `isError` outcome, never as a throw. */
  call(name: string, input: unknown, signal: AbortSignal): Promise<ToolOutcome>;
  /**
   * Stops the servers until the next call: before a task command runs and when the agent's turn
   * ends, so no server is alive while a command or the bot's git works on the tree.
   */
  suspend(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Which MCP tools a task's `mcp_tools` allows: all of them when it is absent; else the exact
 * names `mcp__<server>__<tool>`, and `mcp__<server>` (or `mcp__<server>__*`) for all of a
 * server's tools. Names without the prefix are built-in tools or their aliases (tools.ts).
 */
export function mcpToolFilter(mcpTools: readonly string[] | undefined): (name: string) => boolean {
  if (mcpTools === undefined) return () => true;
  const exact = new Set<string>();
  const servers: string[] = [];
  for (const entry of mcpTools.filter(isMcpSelector)) {
    if (entry.endsWith('__*')) servers.push(entry.slice(0, -1));
    else if (!entry.slice(MCP_PREFIX.length).includes('__')) servers.push(`${entry}__`);
    else exact.add(entry);
  }
  return (name) => exact.has(name) || servers.some((p) => name.startsWith(p));
}

export function isMcpSelector(name: string): boolean {
  return name.startsWith(MCP_PREFIX);
}
