import { errorMessage } from '../common/errors.js';
import { ConfinementError } from '../sandbox/confined-files.js';
import { readLog, runCommand } from './command-tools.js';
import { editFile, listFiles, readFile, writeFile } from './file-tools.js';
import { search } from './search-tool.js';
import { TOOL_INPUTS, TOOL_NAMES, type ToolName } from './tool-catalog.js';
import { briefInput, DEFAULT_TOOL_LIMITS, failure, type ToolContext, type ToolEnv, ToolError, type ToolOutcome } from './tool-results.js';

// The tools are split by concern (catalog, results, file tools, search, commands); their names
// stay importable from here.
export { TOOL_ALIASES, TOOL_NAMES, type ToolName, toolDefinitions, toolsForTask } from './tool-catalog.js';
export { briefInput, DEFAULT_TOOL_LIMITS, failure, firstLine, type ToolContext, type ToolLimits, type ToolOutcome } from './tool-results.js';

/** Runs the agent's tools. Every failure comes back as an `is_error` outcome, never as a throw. */
export class ToolBox {
  private readonly env: ToolEnv;

  constructor(
    ctx: ToolContext,
    private readonly allowed: ReadonlySet<ToolName>,
  ) {
    this.env = { ctx, limits: { ...DEFAULT_TOOL_LIMITS, ...ctx.limits } };
  }

  async run(name: string, input: unknown): Promise<ToolOutcome> {
    const label = `${name} ${briefInput(input)}`.trim();
    if (!(TOOL_NAMES as readonly string[]).includes(name) || !this.allowed.has(name as ToolName)) {
      const offered = TOOL_NAMES.filter((t) => this.allowed.has(t)).join(', ');
      return failure(label, `no tool named "${name}" is available for this task; available: ${offered}`);
    }
    const tool = name as ToolName;
    const parsed = TOOL_INPUTS[tool].safeParse(input ?? {});
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || 'input'}: ${i.message}`).join('; ');
      return failure(label, `invalid input for ${tool}: ${problems}`);
    }
    try {
      return await this.dispatch(tool, parsed.data as never);
    } catch (err) {
      if (err instanceof ToolError || err instanceof ConfinementError) return failure(label, err.message);
      return failure(label, `${tool} failed: ${errorMessage(err)}`);
    }
  }

  private dispatch(tool: ToolName, input: never): Promise<ToolOutcome> {
    switch (tool) {
      case 'list_files':
        return listFiles(this.env, input);
      case 'read_file':
        return readFile(this.env, input);
      case 'search':
        return search(this.env, input);
      case 'write_file':
        return writeFile(this.env, input);
      case 'edit_file':
        return editFile(this.env, input);
      case 'run_command':
        return runCommand(this.env, input);
      case 'read_log':
        return readLog(this.env, input);
    }
  }
}
