import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { didYouMean } from '../common/closest-word.js';
import { objectKeysAt } from '../common/schema-keys.js';
import { type SpecError, validateGraph } from './dag.js';
import { type AcceptanceCriterion, GOAL_ID_MAX, type GoalSpec, GoalSpecSchema } from './schema.js';
import { slugify } from './slug.js';

export class SpecValidationError extends Error {
  constructor(
    readonly source: string,
    readonly errors: SpecError[],
  ) {
    super(`invalid goal spec (${source}):\n${errors.map(formatSpecError).join('\n')}`);
    this.name = 'SpecValidationError';
  }
}

export function formatSpecError(e: SpecError): string {
  const where = e.path ? `${e.path}: ` : '';
  // A hostile id may be thousands of characters long: the message stays one readable line.
  const id = e.taskId && e.taskId.length > 40 ? `${e.taskId.slice(0, 40)}…` : e.taskId;
  const task = e.taskId && !e.message.includes(`"${e.taskId}"`) ? ` (task "${id}")` : '';
  return `${where}${e.message}${task}`;
}

// A CommonMark fence (``` or ~~~, three or more, indented up to 3 spaces) whose info string is `goal`.
const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*goal(?:[ \t][^\n]*)?\n([\s\S]*?)^ {0,3}\1[`~]*[ \t]*$/m;

/** The body of the first ```goal fenced block, if the text has one. */
export function extractGoalBlock(markdown: string): string | undefined {
  return FENCE.exec(markdown.replace(/\r\n/g, '\n'))?.[2];
}

export interface ParseOptions {
  /** Used in messages and to derive a goal id when the spec has none. */
  source?: string;
  /** Goal id to use when the spec does not set one. */
  defaultGoalId?: string;
}

/** Parses JSON, YAML, or markdown holding a ```goal block; validates schema and graph. */
export function parseGoalSpec(text: string, opts: ParseOptions = {}): GoalSpec {
  const source = opts.source ?? 'goal spec';
  const fenced = extractGoalBlock(text);
  const looksLikeMarkdown = /\.(md|markdown)$/i.test(source);
  if (fenced === undefined && looksLikeMarkdown) {
    throw new SpecValidationError(source, [{ path: '', message: 'no ```goal fenced block found in the markdown' }]);
  }
  const raw = parseStructured(fenced ?? text, source);
  return validateGoalSpec(raw, { ...opts, source });
}

/** Validates an already-parsed object (from a file, an issue, or the planner's tool call). */
export function validateGoalSpec(raw: unknown, opts: ParseOptions = {}): GoalSpec {
  const source = opts.source ?? 'goal spec';
  const parsed = GoalSpecSchema.safeParse(raw);
  if (!parsed.success) throw new SpecValidationError(source, zodErrors(parsed.error, raw));
  const graphErrors = validateGraph(parsed.data.tasks);
  if (graphErrors.length > 0) throw new SpecValidationError(source, graphErrors);
  const goalId = parsed.data.goal_id ?? opts.defaultGoalId ?? deriveGoalId(source);
  const acceptance_criteria: AcceptanceCriterion[] = parsed.data.acceptance_criteria.map((c) => (typeof c === 'string' ? { description: c } : c));
  return { ...parsed.data, goal_id: goalId, acceptance_criteria };
}

export async function loadGoalSpecFile(path: string): Promise<GoalSpec> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SpecValidationError(path, [{ path: '', message: code === 'ENOENT' ? 'file not found' : `cannot read file (${code})` }]);
  }
  return parseGoalSpec(text, { source: path });
}

/** `Fix Login Bug!.yml` -> `fix-login-bug`. */
export function deriveGoalId(name: string): string {
  return slugify(basename(name, extname(name)), GOAL_ID_MAX) || 'goal';
}

function parseStructured(text: string, source: string): unknown {
  if (text.trim() === '') throw new SpecValidationError(source, [{ path: '', message: 'the spec is empty' }]);
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new SpecValidationError(
      source,
      doc.errors.slice(0, 5).map((e) => {
        const pos = e.linePos?.[0];
        const msg = (e.message.split('\n')[0] ?? e.message).replace(/ at line \d+, column \d+:?$/, '');
        return { path: pos ? `line ${pos.line}, column ${pos.col}` : '', message: msg };
      }),
    );
  }
  try {
    return doc.toJS(); // throws on an alias bomb (more than maxAliasCount expansions)
  } catch (err) {
    throw new SpecValidationError(source, [{ path: '', message: `cannot read the YAML: ${(err as Error).message}` }]);
  }
}

// Keys echoed back in an error: a file that is no spec (read by mistake, or on purpose) must
// not come back through its keys, and a hostile key stays one short visible line.
const ECHOED_KEYS = 5;
const ECHOED_KEY_CHARS = 64;

/** A key as echoed: cut short, control and invisible characters shown as escapes. */
function echoKey(key: string): string {
  const chars = Array.from(key); // code points, as the cap counts them
  const cut = chars.length > ECHOED_KEY_CHARS ? `${chars.slice(0, ECHOED_KEY_CHARS).join('')}…` : key;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters in a key are shown as escapes
  return `"${cut.replace(/[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"\\]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

function unknownKeys(keys: readonly string[], known: readonly string[]): string {
  const shown = keys
    .slice(0, ECHOED_KEYS)
    .map((k) => `${echoKey(k)}${didYouMean(k, known)}`)
    .join(', ');
  return `unknown key${keys.length > 1 ? 's' : ''} ${shown}${keys.length > ECHOED_KEYS ? ` and ${keys.length - ECHOED_KEYS} more` : ''}`;
}

/** A mapping none of whose keys a spec has is some other file: none of it is echoed. */
function notASpec(raw: unknown): SpecError[] | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const keys = Object.keys(raw);
  if (keys.length === 0 || keys.some((k) => k in GoalSpecSchema.shape)) return undefined;
  return [{ path: '(root)', message: `not a goal spec: a mapping of ${keys.length} key${keys.length === 1 ? '' : 's'}, none of them a goal spec key such as \`objective\` or \`tasks\` (none shown)` }];
}

function zodErrors(error: z.ZodError, raw: unknown): SpecError[] {
  const other = notASpec(raw);
  if (other) return other;
  return error.issues.map((issue) => {
    const path = formatPath(issue.path);
    const taskId = taskIdAt(raw, issue.path);
    let message = issue.message;
    if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) message = 'is required';
    else if (issue.code === 'invalid_type' && issue.expected === 'string' && /received number/.test(issue.message)) {
      message = 'must be a string (quote it in YAML, e.g. "01")';
    }
    if (issue.code === 'unrecognized_keys') message = unknownKeys(issue.keys, objectKeysAt(GoalSpecSchema, issue.path));
    return { path: path || '(root)', message, ...(taskId ? { taskId } : {}) };
  });
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${String(seg)}` : String(seg);
  return out;
}

function taskIdAt(raw: unknown, path: readonly PropertyKey[]): string | undefined {
  if (path[0] !== 'tasks' || typeof path[1] !== 'number') return undefined;
  const tasks = (raw as { tasks?: unknown }).tasks;
  if (!Array.isArray(tasks)) return undefined;
  const id = (tasks[path[1]] as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' ? id : undefined;
}
