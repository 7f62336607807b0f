import type { Sandbox } from '../ports/sandbox.js';
import type { ConfinedFiles } from '../sandbox/confined-files.js';
import { excerpt, type Scratchpad } from './scratchpad.js';

/** What every tool gets, and how its results are kept small and told to the model. */

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

/** A tool's context with its limits resolved. */
export interface ToolEnv {
  ctx: ToolContext;
  limits: ToolLimits;
}

export interface ToolOutcome {
  content: string;
  isError: boolean;
  /** One line, for the folded history. */
  summary: string;
}

/** A tool call the model cannot make work: its message goes back as an `is_error` result. */
export class ToolError extends Error {}

/** Long listings go to the scratchpad whole; the result keeps an excerpt and the log id. */
export async function bounded(t: ToolEnv, label: string, body: string): Promise<string> {
  if (body.length <= t.limits.listingChars) return body;
  const id = await t.ctx.scratch.save(label, body);
  return excerpt(body, Math.floor(t.limits.listingChars * 0.8), Math.floor(t.limits.listingChars * 0.2), `all of it: read_log {"id": "${id}"}`);
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
