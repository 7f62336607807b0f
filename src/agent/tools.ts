import { spawn } from 'node:child_process';
import { posix, relative } from 'node:path';
import { z } from 'zod';
import type { CommandResult, Sandbox } from '../ports/sandbox.js';
import { ConfinedFiles, ConfinementError } from '../sandbox/confined-files.js';
import { protectedMatches } from '../config/protected-paths.js';
import type { ToolDefinition } from './model.js';
import { excerpt, type Scratchpad } from './scratchpad.js';

export const TOOL_NAMES = ['list_files', 'read_file', 'search', 'write_file', 'edit_file', 'run_command', 'read_log'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/**
 * Names a goal spec's `mcp_tools` may use for our built-in tools: the seed's MCP-style names, and
 * our own. `read_log` is always offered: it only pages this attempt's own logs.
 */
export const TOOL_ALIASES: Readonly<Record<string, readonly ToolName[]>> = Object.freeze({
  ripgrep_search: ['search'],
  filesystem_replace: ['edit_file'],
  filesystem_view: ['read_file', 'list_files'],
  filesystem_write: ['write_file'],
  bash_execute: ['run_command'],
  ...Object.fromEntries(TOOL_NAMES.map((n) => [n, [n]])),
});

/** The tools a task may use: all of them, or those its `mcp_tools` names (plus `read_log`). */
export function toolsForTask(mcpTools: readonly string[] | undefined): { tools: ToolName[]; unknown: string[] } {
  if (mcpTools === undefined) return { tools: [...TOOL_NAMES], unknown: [] };
  const chosen = new Set<ToolName>(['read_log']);
  const unknown: string[] = [];
  for (const name of mcpTools) {
    const mapped = TOOL_ALIASES[name];
    if (mapped) mapped.forEach((t) => chosen.add(t));
    else unknown.push(name);
  }
  return { tools: TOOL_NAMES.filter((t) => chosen.has(t)), unknown };
}

/** Sizes that keep every tool result small enough for the window (tier 2). */
export interface ToolLimits {
  /** A command's output beyond head + tail goes to the scratchpad only. */
  outputHeadChars: number;
  outputTailChars: number;
  /** Most characters `read_file` returns in one call. */
  readChars: number;
  /** Default and largest `limit` (lines) of `read_file`. */
  readLines: number;
  maxReadLines: number;
  /** `search` and `list_files` results beyond this go to the scratchpad, with an excerpt. */
  listingChars: number;
  /** Bytes of ripgrep output kept at most; it is stopped past that. */
  searchMaxBytes: number;
  searchTimeoutMs: number;
}

export const DEFAULT_TOOL_LIMITS: Readonly<ToolLimits> = Object.freeze({
  outputHeadChars: 1500,
  outputTailChars: 2500,
  readChars: 12_000,
  readLines: 400,
  maxReadLines: 2000,
  listingChars: 5000,
  searchMaxBytes: 1024 * 1024,
  searchTimeoutMs: 30_000,
});

const pathField = z.string().min(1);
const INPUTS = {
  list_files: z.strictObject({ path: z.string().optional().describe('Directory relative to the workspace root; default ".".') }),
  read_file: z.strictObject({
    path: pathField.describe('File path relative to the workspace root.'),
    offset: z.number().int().min(1).optional().describe('First line to return (1-based); default 1.'),
    limit: z.number().int().min(1).optional().describe('Number of lines to return; default 400, at most 2000.'),
  }),
  search: z.strictObject({
    pattern: z.string().min(1).describe('A regular expression (ripgrep syntax).'),
    path: z.string().optional().describe('File or directory to search, relative to the workspace root; default ".".'),
  }),
  write_file: z.strictObject({
    path: pathField.describe('File path relative to the workspace root; missing directories are created.'),
    content: z.string().describe('The complete new content of the file.'),
  }),
  edit_file: z.strictObject({
    path: pathField.describe('File path relative to the workspace root.'),
    old_string: z.string().min(1).describe('Exact text to replace; it must occur exactly once in the file (include surrounding lines to make it unique).'),
    new_string: z.string().describe('The replacement text.'),
  }),
  run_command: z.strictObject({ command: z.string().min(1).describe('A bash command line, run in the workspace root in the sandbox.') }),
  read_log: z.strictObject({
    id: z.string().min(1).describe('Log id, e.g. "L3", as given in an earlier tool result.'),
    offset: z.number().int().min(0).optional().describe('Byte offset to start from; default 0.'),
  }),
} satisfies Record<ToolName, z.ZodType>;

const DESCRIPTIONS: Record<ToolName, string> = {
  list_files: 'List the entries of a directory of the workspace (directories end with "/", symlinks with "@"). .git is never shown.',
  read_file:
    'Read a text file of the workspace. Lines come numbered ("   12\\t<line>"); the numbers are not part of the file. Long files come in pages: pass offset and limit.',
  search: 'Search file contents of the workspace with ripgrep. Returns matching lines as path:line:text. Hidden files are searched, .git never.',
  write_file: 'Create or overwrite a file of the workspace with the given content. Prefer edit_file to change part of an existing file.',
  edit_file:
    'Replace one exact occurrence of old_string with new_string in a file. Fails, changing nothing, when old_string is missing or occurs more than once.',
  run_command:
    'Run a bash command in the workspace root, inside the sandbox (no network; only the workspace is writable; killed at the task timeout). ' +
    'Returns the exit code and the output (long output is cut to a head and a tail; the full output is kept as a log you can page with read_log).',
  read_log: 'Read a page of a log kept by an earlier tool call of this attempt (full command output or a long listing).',
};

export function toolDefinitions(names: readonly ToolName[]): ToolDefinition[] {
  return names.map((name) => {
    const { $schema: _drop, ...schema } = z.toJSONSchema(INPUTS[name], { io: 'input' }) as Record<string, unknown>;
    return { name, description: DESCRIPTIONS[name], input_schema: { ...schema, type: 'object' } };
  });
}

export interface ToolContext {
  files: ConfinedFiles;
  sandbox: Sandbox;
  scratch: Scratchpad;
  workspaceDir: string;
  protectedPaths: readonly string[];
  /** The task timeout, for `run_command`. */
  timeoutMs: number;
  /** GOAL_ID, GOAL_TASK_ID, GOAL_ATTEMPT for `run_command`. */
  env: Record<string, string>;
  signal: AbortSignal;
  limits?: Partial<ToolLimits>;
  /** The ripgrep binary (default `rg` on PATH). */
  rgPath?: string;
}

export interface ToolOutcome {
  content: string;
  isError: boolean;
  /** One line, for the folded history. */
  summary: string;
}

/** A tool call the model cannot make work: its message goes back as an `is_error` result. */
class ToolError extends Error {}

/** Runs the agent's tools. Every failure comes back as an `is_error` outcome, never as a throw. */
export class ToolBox {
  private readonly limits: ToolLimits;

  constructor(
    private readonly ctx: ToolContext,
    private readonly allowed: ReadonlySet<ToolName>,
  ) {
    this.limits = { ...DEFAULT_TOOL_LIMITS, ...ctx.limits };
  }

  async run(name: string, input: unknown): Promise<ToolOutcome> {
    const label = `${name} ${briefInput(input)}`.trim();
    if (!(TOOL_NAMES as readonly string[]).includes(name) || !this.allowed.has(name as ToolName)) {
      const offered = TOOL_NAMES.filter((t) => this.allowed.has(t)).join(', ');
      return failure(label, `no tool named "${name}" is available for this task; available: ${offered}`);
    }
    const tool = name as ToolName;
    const parsed = INPUTS[tool].safeParse(input ?? {});
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || 'input'}: ${i.message}`).join('; ');
      return failure(label, `invalid input for ${tool}: ${problems}`);
    }
    try {
      return await this.dispatch(tool, parsed.data as never);
    } catch (err) {
      if (err instanceof ToolError || err instanceof ConfinementError) return failure(label, err.message);
      return failure(label, `${tool} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private dispatch(tool: ToolName, input: never): Promise<ToolOutcome> {
    switch (tool) {
      case 'list_files':
        return this.listFiles(input);
      case 'read_file':
        return this.readFile(input);
      case 'search':
        return this.search(input);
      case 'write_file':
        return this.writeFile(input);
      case 'edit_file':
        return this.editFile(input);
      case 'run_command':
        return this.runCommand(input);
      case 'read_log':
        return this.readLog(input);
    }
  }

  private async listFiles(input: z.infer<(typeof INPUTS)['list_files']>): Promise<ToolOutcome> {
    const path = input.path?.trim() || '.';
    const { entries, truncated } = await this.ctx.files.list(path);
    const lines = entries.map((e) => `${e.name}${e.type === 'dir' ? '/' : e.type === 'symlink' ? '@' : ''}`);
    const body = `${path === '.' ? './' : `${path.replace(/\/+$/, '')}/`} (${entries.length} entries${truncated ? ', list cut' : ''})\n${lines.join('\n')}`;
    return { content: await this.bounded('list', body), isError: false, summary: `list_files ${path} → ${entries.length} entries` };
  }

  private async readFile(input: z.infer<(typeof INPUTS)['read_file']>): Promise<ToolOutcome> {
    const text = await this.ctx.files.read(input.path);
    if (text.includes('\0')) return { content: `${input.path}: a binary file (${Buffer.byteLength(text)} bytes); not shown`, isError: false, summary: `read_file ${input.path} → binary` };
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const total = lines.length;
    const start = Math.min((input.offset ?? 1) - 1, total);
    const limit = Math.min(input.limit ?? this.limits.readLines, this.limits.maxReadLines);
    const out: string[] = [];
    let chars = 0;
    let i = start;
    for (; i < Math.min(total, start + limit); i++) {
      const line = `${String(i + 1).padStart(6)}\t${lines[i]}`;
      if (chars + line.length > this.limits.readChars && out.length > 0) break;
      out.push(line.length > this.limits.readChars ? `${line.slice(0, this.limits.readChars)}… [line cut]` : line);
      chars += line.length + 1;
    }
    const shown = out.length ? `lines ${start + 1}-${i} of ${total}` : `no lines (the file has ${total})`;
    const more = i < total ? `\n[… more: read_file {"path": ${JSON.stringify(input.path)}, "offset": ${i + 1}}]` : '';
    return { content: `${input.path}: ${shown}\n${out.join('\n')}${more}`, isError: false, summary: `read_file ${input.path} → ${shown}` };
  }

  private async search(input: z.infer<(typeof INPUTS)['search']>): Promise<ToolOutcome> {
    const path = input.path?.trim() || '.';
    const real = await this.ctx.files.resolveExisting(path, true);
    const target = relative(this.ctx.files.root, real) || '.';
    const args = [
      '--no-config',
      '--line-number',
      '--no-heading',
      '--with-filename',
      '--color=never',
      '--hidden',
      '--iglob=!.git',
      '--max-columns=300',
      '--max-columns-preview',
      '--max-filesize=1M',
      '--max-count=100',
      `--regexp=${input.pattern}`,
      '--',
      target,
    ];
    const r = await runBounded(this.ctx.rgPath ?? 'rg', args, this.ctx.files.root, this.limits.searchMaxBytes, this.limits.searchTimeoutMs, this.ctx.signal);
    if (r.notFound) throw new ToolError('search is unavailable: ripgrep (rg) is not installed on this host; use run_command with grep instead');
    if (r.code === 1 && !r.stdout) return { content: `no matches for /${input.pattern}/ in ${path}`, isError: false, summary: `search /${input.pattern}/ in ${path} → no matches` };
    if (r.code !== 0 && r.code !== 1 && !r.cut) throw new ToolError(`search failed: ${r.stderr.trim() || `rg exited with ${r.code}`}`);
    const matches = r.stdout ? r.stdout.replace(/\n$/, '').split('\n').length : 0;
    const body = `${matches} matching lines${r.cut ? ' (output stopped: too many matches; narrow the pattern or the path)' : ''}\n${r.stdout}`;
    return { content: await this.bounded('search', body), isError: false, summary: `search /${input.pattern}/ in ${path} → ${matches} lines` };
  }

  private async writeFile(input: z.infer<(typeof INPUTS)['write_file']>): Promise<ToolOutcome> {
    await this.checkProtected(input.path);
    await this.ctx.files.write(input.path, input.content);
    const bytes = Buffer.byteLength(input.content);
    return { content: `wrote ${input.path} (${bytes} bytes)`, isError: false, summary: `write_file ${input.path} → ${bytes} bytes` };
  }

  private async editFile(input: z.infer<(typeof INPUTS)['edit_file']>): Promise<ToolOutcome> {
    await this.checkProtected(input.path);
    if (input.old_string === input.new_string) throw new ToolError(`${input.path}: old_string and new_string are the same; nothing to change`);
    const text = await this.ctx.files.read(input.path);
    const at: number[] = [];
    for (let i = text.indexOf(input.old_string); i !== -1; i = text.indexOf(input.old_string, i + input.old_string.length)) at.push(i);
    if (at.length === 0) {
      throw new ToolError(`${input.path}: old_string was not found; nothing changed. Read the file again and copy the exact text, whitespace and indentation included.`);
    }
    if (at.length > 1) {
      const lines = at.slice(0, 10).map((i) => text.slice(0, i).split('\n').length);
      throw new ToolError(
        `${input.path}: old_string occurs ${at.length} times (lines ${lines.join(', ')}${at.length > 10 ? ', …' : ''}); nothing changed. Include more surrounding text so it matches exactly once.`,
      );
    }
    const i = at[0]!;
    await this.ctx.files.write(input.path, text.slice(0, i) + input.new_string + text.slice(i + input.old_string.length));
    const line = text.slice(0, i).split('\n').length;
    return { content: `edited ${input.path} at line ${line}`, isError: false, summary: `edit_file ${input.path} → line ${line}` };
  }

  private async runCommand(input: z.infer<(typeof INPUTS)['run_command']>): Promise<ToolOutcome> {
    const log = this.ctx.scratch.reserve('command');
    let result: CommandResult;
    try {
      result = await this.ctx.sandbox.run({
        command: input.command,
        cwd: this.ctx.workspaceDir,
        env: this.ctx.env,
        timeoutMs: this.ctx.timeoutMs,
        logPath: log.path,
        signal: this.ctx.signal,
      });
    } catch (err) {
      throw new ToolError(`the sandbox could not run the command: ${err instanceof Error ? err.message : String(err)}`);
    }
    const status = result.aborted
      ? 'was aborted'
      : result.timedOut
        ? `timed out after ${Math.round(this.ctx.timeoutMs / 1000)}s and was killed`
        : result.exitCode === null
          ? `was killed by ${result.signal ?? 'a signal'}`
          : `exit code ${result.exitCode}`;
    const cmd = input.command.length > 80 ? `${input.command.slice(0, 80)}…` : input.command;
    const out = result.output;
    const long = out.length > this.limits.outputHeadChars + this.limits.outputTailChars || result.truncated;
    const shown = long ? excerpt(out, this.limits.outputHeadChars, this.limits.outputTailChars, `full output: read_log {"id": "${log.id}"}`) : out;
    const header = `${status}; ${result.outputBytes} bytes of output${long ? ` (log ${log.id})` : ''}; ${(result.durationMs / 1000).toFixed(1)}s`;
    return {
      content: `${header}\n${shown || '(no output)'}`,
      // A failing command is information, not a tool failure: the model reads it and acts.
      isError: false,
      summary: `run_command ${JSON.stringify(cmd)} → ${status}, ${result.outputBytes} bytes${long ? ` (log ${log.id})` : ''}`,
    };
  }

  private async readLog(input: z.infer<(typeof INPUTS)['read_log']>): Promise<ToolOutcome> {
    const page = await this.ctx.scratch.page(input.id, input.offset ?? 0).catch((err: Error) => {
      throw new ToolError(err.message);
    });
    return { content: page, isError: false, summary: `read_log ${input.id} @${input.offset ?? 0}` };
  }

  /** Refuses writes to the repo's protected paths (the checkpoint would be refused anyway). */
  private async checkProtected(path: string): Promise<void> {
    if (this.ctx.protectedPaths.length === 0) return;
    const candidates = [posix.normalize(path.replace(/^\.\/+/, ''))];
    const real = await this.ctx.files.resolveExisting(path).catch(() => undefined);
    if (real) candidates.push(relative(this.ctx.files.root, real).split('\\').join('/'));
    const hit = protectedMatches(candidates, this.ctx.protectedPaths);
    if (hit.length > 0) throw new ToolError(`${path}: a protected path (${this.ctx.protectedPaths.join(', ')}); the goal may not change it`);
  }

  /** Long listings go to the scratchpad whole; the result keeps an excerpt and the log id. */
  private async bounded(label: string, body: string): Promise<string> {
    if (body.length <= this.limits.listingChars) return body;
    const id = await this.ctx.scratch.save(label, body);
    return excerpt(body, Math.floor(this.limits.listingChars * 0.8), Math.floor(this.limits.listingChars * 0.2), `all of it: read_log {"id": "${id}"}`);
  }
}

/** A tool call that failed, as the model sees it. */
export function failure(label: string, message: string): ToolOutcome {
  return { content: message, isError: true, summary: `${label} → error: ${firstLine(message)}` };
}

export function firstLine(text: string, max = 120): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/** A short rendering of a tool input for the one-line history. */
export function briefInput(input: unknown): string {
  if (!input || typeof input !== 'object') return '';
  const o = input as Record<string, unknown>;
  const key = ['path', 'command', 'pattern', 'id'].find((k) => typeof o[k] === 'string');
  if (!key) return '';
  const v = String(o[key]);
  return JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}…` : v);
}

interface BoundedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  cut: boolean;
  notFound: boolean;
}

/** Runs a helper program (ripgrep) with a clean environment, bounded output and a timeout. */
function runBounded(program: string, args: string[], cwd: string, maxBytes: number, timeoutMs: number, signal: AbortSignal): Promise<BoundedRun> {
  return new Promise((resolve) => {
    const child = spawn(program, args, { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let cut = false;
    const stop = () => child.kill('SIGKILL');
    const timer = setTimeout(() => {
      cut = true;
      stop();
    }, timeoutMs);
    signal.addEventListener('abort', stop, { once: true });
    child.stdout.on('data', (c: Buffer) => {
      if (cut) return;
      if (bytes + c.length > maxBytes) {
        out.push(c.subarray(0, maxBytes - bytes));
        bytes = maxBytes;
        cut = true;
        stop();
        return;
      }
      out.push(c);
      bytes += c.length;
    });
    child.stderr.on('data', (c: Buffer) => {
      if (err.reduce((n, b) => n + b.length, 0) < 64 * 1024) err.push(c);
    });
    const done = (r: BoundedRun) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
      resolve(r);
    };
    child.on('error', (e: NodeJS.ErrnoException) => done({ code: null, stdout: '', stderr: e.message, cut: false, notFound: e.code === 'ENOENT' }));
    child.on('close', (code) => {
      let stdout = Buffer.concat(out).toString('utf8');
      if (cut) stdout = stdout.slice(0, stdout.lastIndexOf('\n') + 1);
      done({ code, stdout, stderr: Buffer.concat(err).toString('utf8'), cut, notFound: false });
    });
  });
}
