import { z } from 'zod';
import type { ToolDefinition } from './model.js';

/** The agent's built-in tools: their names, the names a spec may use for them, inputs, descriptions. */
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
    if (mapped) for (const t of mapped) chosen.add(t);
    else unknown.push(name);
  }
  return { tools: TOOL_NAMES.filter((t) => chosen.has(t)), unknown };
}

const pathField = z.string().min(1);
/** Each tool's input, checked before the tool runs. */
export const TOOL_INPUTS = {
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
  read_file: 'Read a text file of the workspace. Lines come numbered ("   12\\t<line>"); the numbers are not part of the file. Long files come in pages: pass offset and limit.',
  search: 'Search file contents of the workspace with ripgrep. Returns matching lines as path:line:text. Hidden files are searched, .git never.',
  write_file: 'Create or overwrite a file of the workspace with the given content. Prefer edit_file to change part of an existing file.',
  edit_file: 'Replace one exact occurrence of old_string with new_string in a file. Fails, changing nothing, when old_string is missing or occurs more than once.',
  run_command:
    'Run a bash command in the workspace root, inside the sandbox (no network; only the workspace is writable; killed at the task timeout). ' +
    'Returns the exit code and the output (long output is cut to a head and a tail; the full output is kept as a log you can page with read_log).',
  read_log: 'Read a page of a log kept by an earlier tool call of this attempt (full command output or a long listing).',
};

export function toolDefinitions(names: readonly ToolName[]): ToolDefinition[] {
  return names.map((name) => {
    const { $schema: _drop, ...schema } = z.toJSONSchema(TOOL_INPUTS[name], { io: 'input' }) as Record<string, unknown>;
    return { name, description: DESCRIPTIONS[name], input_schema: { ...schema, type: 'object' } };
  });
}

export type ToolInput<T extends ToolName> = z.infer<(typeof TOOL_INPUTS)[T]>;
