import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local fake of the Anthropic Messages API (`POST /v1/messages`), reached by the real SDK
 * through ANTHROPIC_BASE_URL. It plays a script of replies (fixed, or computed from the request),
 * records every request, and checks each one against the API's rules for tool use the way the
 * real API does: a request that breaks them gets the 400 `invalid_request_error` the API would
 * send, and lands in `violations`.
 */

export interface ApiUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export type ApiBlock =
  | { type: 'text'; text: string; cache_control?: unknown }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_result'; tool_use_id: string; content?: unknown; is_error?: boolean; cache_control?: unknown };

export interface ApiMessage {
  role: 'user' | 'assistant';
  content: string | ApiBlock[];
}

export interface MessagesBody {
  model: string;
  max_tokens: number;
  system?: string | Array<{ type: 'text'; text: string; cache_control?: unknown }>;
  tools?: Array<{ name: string; description?: string; input_schema: unknown; cache_control?: unknown }>;
  tool_choice?: { type: string; name?: string };
  messages: ApiMessage[];
  [key: string]: unknown;
}

export type Reply =
  | { kind: 'message'; content: ApiBlock[]; stopReason?: string; usage?: Partial<ApiUsage> }
  | { kind: 'error'; status: number; type: string; message: string; headers?: Record<string, string> };

export type Responder = Reply | ((body: MessagesBody, index: number) => Reply);

export interface RecordedRequest {
  body: MessagesBody;
  headers: IncomingMessage['headers'];
  /** What was answered: the HTTP status. */
  status: number;
}

export interface FakeAnthropicOptions {
  /** Answer a forced tool_choice (`any` or `tool`) with a 400, as newer models do. */
  rejectForcedToolChoice?: boolean;
}

let idSeq = 0;

export class FakeAnthropic {
  readonly requests: RecordedRequest[] = [];
  /** Requests that broke the API's rules (answered with a 400). */
  readonly violations: Array<{ index: number; problems: string[] }> = [];
  private readonly script: Responder[] = [];
  private fallback: ((body: MessagesBody, index: number) => Reply) | undefined;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    private readonly opts: FakeAnthropicOptions,
  ) {}

  static async start(opts: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
    let fake: FakeAnthropic | undefined;
    const server = createServer((req, res) => {
      fake!.handle(req, res).catch((err: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: `fake server failure: ${String(err)}` } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    fake = new FakeAnthropic(server, `http://127.0.0.1:${port}`, opts);
    return fake;
  }

  /** The environment the adapter reads: a test key and this server as the base URL. */
  env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return { ANTHROPIC_API_KEY: 'sk-ant-test-key', ANTHROPIC_BASE_URL: this.url, ...extra };
  }

  /** Appends replies, played in order, one per request. */
  push(...responders: Responder[]): this {
    this.script.push(...responders);
    return this;
  }

  /** The reply for any request once the script is played out. */
  otherwise(fn: (body: MessagesBody, index: number) => Reply): this {
    this.fallback = fn;
    return this;
  }

  /** Requests that were answered with a message (not an error). */
  get answered(): MessagesBody[] {
    return this.requests.filter((r) => r.status === 200).map((r) => r.body);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
      return send(res, 404, { type: 'error', error: { type: 'not_found_error', message: `fake: no route ${req.method} ${req.url}` } });
    }
    const body = JSON.parse(raw) as MessagesBody;
    const index = this.requests.length;
    const record: RecordedRequest = { body, headers: req.headers, status: 0 };
    this.requests.push(record);

    const problems = requestProblems(body, this.opts);
    if (problems.length > 0) {
      this.violations.push({ index, problems });
      record.status = 400;
      return send(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: problems.join('; ') } });
    }
    const responder = this.script.shift() ?? this.fallback;
    const answer: Reply = !responder
      ? { kind: 'error', status: 400, type: 'invalid_request_error', message: `fake: the script has no reply for request #${index + 1}` }
      : typeof responder === 'function'
        ? responder(body, index)
        : responder;
    if (answer.kind === 'error') {
      record.status = answer.status;
      return send(res, answer.status, { type: 'error', error: { type: answer.type, message: answer.message } }, answer.headers);
    }
    record.status = 200;
    const hasToolUse = answer.content.some((b) => b.type === 'tool_use');
    return send(res, 200, {
      id: `msg_fake_${++idSeq}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: answer.content.map((b) => (b.type === 'text' ? { ...b, citations: null } : b)),
      stop_reason: answer.stopReason ?? (hasToolUse ? 'tool_use' : 'end_turn'),
      stop_sequence: null,
      usage: {
        input_tokens: Math.ceil(Buffer.byteLength(raw) / 4),
        output_tokens: 20,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        ...answer.usage,
      },
    });
  }
}

function send(res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_fake_${++idSeq}`, ...headers });
  res.end(JSON.stringify(payload));
}

/** The Messages API's checks that matter for a tool-use loop, written apart from the agent's own. */
export function requestProblems(body: MessagesBody, opts: FakeAnthropicOptions = {}): string[] {
  const p: string[] = [];
  if (typeof body.model !== 'string' || !body.model) p.push('model: required');
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) p.push('max_tokens: must be a positive integer');
  if (!Array.isArray(body.messages) || body.messages.length === 0) return [...p, 'messages: at least one message is required'];
  const toolNames = new Set((body.tools ?? []).map((t) => t.name));
  if (toolNames.size !== (body.tools ?? []).length) p.push('tools: tool names must be unique');
  if (body.tool_choice) {
    if (opts.rejectForcedToolChoice && (body.tool_choice.type === 'any' || body.tool_choice.type === 'tool')) {
      p.push('tool_choice: forced tool use is not supported for this model; use tool_choice auto');
    }
    if (body.tool_choice.type === 'tool' && !toolNames.has(body.tool_choice.name ?? '')) p.push(`tool_choice: no tool named ${body.tool_choice.name}`);
  }
  let breakpoints = 0;
  const countCache = (b: object) => {
    if ('cache_control' in b && b.cache_control) breakpoints += 1;
  };
  for (const b of body.tools ?? []) countCache(b);
  if (Array.isArray(body.system)) for (const b of body.system) countCache(b);
  const blocks = (m: ApiMessage): ApiBlock[] => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content);
  if (body.messages[0]!.role !== 'user') p.push('messages.0: the first message must use the "user" role');
  const used = new Set<string>();
  body.messages.forEach((m, i) => {
    const content = blocks(m);
    for (const b of content) countCache(b);
    if (content.length === 0) p.push(`messages.${i}: content must be non-empty`);
    if (i > 0 && body.messages[i - 1]!.role === m.role) p.push(`messages.${i}: roles must alternate between "user" and "assistant"`);
    for (const b of content) {
      if ((b.type === 'tool_use' || b.type === 'thinking' || b.type === 'redacted_thinking') && m.role !== 'assistant') p.push(`messages.${i}: ${b.type} only in assistant messages`);
      if (b.type === 'tool_result' && m.role !== 'user') p.push(`messages.${i}: tool_result only in user messages`);
      if (b.type === 'tool_use') {
        if (used.has(b.id)) p.push(`messages.${i}: tool_use ids must be unique (${b.id})`);
        used.add(b.id);
        if (toolNames.size === 0) p.push(`messages.${i}: requests which include tool_use blocks must define tools`);
      }
    }
    if (m.role === 'assistant') {
      const ids = content.filter((b) => b.type === 'tool_use').map((b) => (b as { id: string }).id);
      if (ids.length === 0) return;
      const next = body.messages[i + 1];
      const results: string[] = [];
      for (const b of next ? blocks(next) : []) {
        if (b.type !== 'tool_result') break;
        results.push(b.tool_use_id);
      }
      for (const id of ids) {
        if (!results.includes(id)) {
          p.push(
            `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${id}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
          );
        }
      }
    } else {
      const prev = body.messages[i - 1];
      const ids =
        prev && prev.role === 'assistant'
          ? blocks(prev)
              .filter((b) => b.type === 'tool_use')
              .map((b) => (b as { id: string }).id)
          : [];
      for (const b of content) {
        if (b.type === 'tool_result' && !ids.includes(b.tool_use_id)) {
          p.push(
            `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
      }
    }
  });
  if (breakpoints > 4) p.push(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`);
  return p;
}

// Builders for scripts.

export function toolUse(name: string, input: Record<string, unknown>, id = `toolu_${++idSeq}`): ApiBlock {
  return { type: 'tool_use', id, name, input };
}

export function text(t: string): ApiBlock {
  return { type: 'text', text: t };
}

export function reply(content: ApiBlock[], usage?: Partial<ApiUsage>): Reply {
  return { kind: 'message', content, ...(usage ? { usage } : {}) };
}

export function apiError(status: number, type: string, message: string): Reply {
  // retry-after-ms keeps the SDK's own backoff short in tests.
  return { kind: 'error', status, type, message, headers: { 'retry-after-ms': '1' } };
}

export const overloaded = (): Reply => apiError(529, 'overloaded_error', 'Overloaded');
export const rateLimited = (): Reply => apiError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit');

/** The text of every block of a request (system, messages, tool results), for "did X reach the prompt" checks. */
export function promptText(body: MessagesBody): string {
  const parts: string[] = [];
  if (typeof body.system === 'string') parts.push(body.system);
  else for (const s of body.system ?? []) parts.push(s.text);
  for (const m of body.messages) {
    if (typeof m.content === 'string') parts.push(m.content);
    else
      for (const b of m.content) {
        if (b.type === 'text') parts.push(b.text);
        if (b.type === 'tool_result') parts.push(typeof b.content === 'string' ? b.content : JSON.stringify(b.content));
        if (b.type === 'tool_use') parts.push(JSON.stringify(b.input));
      }
  }
  return parts.join('\n');
}

/** The tool_result blocks of the last message of a request. */
export function lastToolResults(body: MessagesBody): Array<{ tool_use_id: string; content: string; is_error: boolean }> {
  const last = body.messages.at(-1);
  if (!last || typeof last.content === 'string') return [];
  return last.content
    .filter((b): b is Extract<ApiBlock, { type: 'tool_result' }> => b.type === 'tool_result')
    .map((b) => ({ tool_use_id: b.tool_use_id, content: typeof b.content === 'string' ? b.content : JSON.stringify(b.content), is_error: b.is_error === true }));
}
