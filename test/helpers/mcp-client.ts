import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { onTestFinished } from 'vitest';
import { CLI } from './cli.js';

export interface ToolAnswer {
  isError: boolean;
  text: string;
  /** The JSON answer, when the text is JSON. */
  json: unknown;
}

export interface GoalLoopClient {
  client: Client;
  call(name: string, args?: Record<string, unknown>): Promise<ToolAnswer>;
  /** Like call, but fails the test on a tool error. */
  // biome-ignore lint/suspicious/noExplicitAny: a tool's JSON answer, read field by field in the tests' assertions
  ok(name: string, args?: Record<string, unknown>): Promise<any>;
  /** What the server asked the human (elicitation messages). */
  asked: string[];
  stderr(): string;
  close(): Promise<void>;
}

export interface ConnectOptions {
  env: Record<string, string>;
  args?: string[];
  /** Answers elicitation requests (the human); without it the client does not offer elicitation. */
  human?: (message: string) => boolean;
}

/** A real MCP client (the SDK's Client over stdio) connected to the built `goal-loop mcp`. */
export async function connectGoalLoop(opts: ConnectOptions): Promise<GoalLoopClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', ...(opts.args ?? [])],
    env: { ...getDefaultEnvironment(), LOG_LEVEL: 'warn', ...opts.env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const client = new Client({ name: 'goal-loop-test', version: '1.0.0' }, { capabilities: opts.human ? { elicitation: { form: {} } } : {} });
  const asked: string[] = [];
  if (opts.human) {
    const human = opts.human;
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { confirm: human(req.params.message) } };
    });
  }
  await client.connect(transport);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await client.close();
  };
  onTestFinished(close);
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<ToolAnswer> => {
    const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
    const text = (r.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('\n');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { isError: r.isError === true, text, json };
  };
  return {
    client,
    call,
    async ok(name, args) {
      const r = await call(name, args);
      if (r.isError) throw new Error(`${name} failed: ${r.text}\n--- server stderr ---\n${stderr}`);
      return r.json ?? r.text;
    },
    asked,
    stderr: () => stderr,
    close,
  };
}
