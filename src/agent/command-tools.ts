import type { CommandResult } from '../ports/sandbox.js';
import { excerpt } from './scratchpad.js';
import type { ToolInput } from './tool-catalog.js';
import { type ToolEnv, ToolError, type ToolOutcome } from './tool-results.js';

/** run_command (in the sandbox, its full output kept as a log) and read_log (pages those logs). */

export async function runCommand(t: ToolEnv, input: ToolInput<'run_command'>): Promise<ToolOutcome> {
  const log = t.ctx.scratch.reserve('command');
  let result: CommandResult;
  try {
    result = await t.ctx.sandbox.run({
      command: input.command,
      cwd: t.ctx.workspaceDir,
      env: t.ctx.env,
      timeoutMs: t.ctx.timeoutMs,
      logPath: log.path,
      signal: t.ctx.signal,
    });
  } catch (err) {
    throw new ToolError(`the sandbox could not run the command: ${err instanceof Error ? err.message : String(err)}`);
  }
  const status = result.aborted
    ? 'was aborted'
    : result.timedOut
      ? `timed out after ${Math.round(t.ctx.timeoutMs / 1000)}s and was killed`
      : result.exitCode === null
        ? `was killed by ${result.signal ?? 'a signal'}`
        : `exit code ${result.exitCode}`;
  const cmd = input.command.length > 80 ? `${input.command.slice(0, 80)}…` : input.command;
  const out = result.output;
  const long = out.length > t.limits.outputHeadChars + t.limits.outputTailChars || result.truncated;
  const shown = long ? excerpt(out, t.limits.outputHeadChars, t.limits.outputTailChars, `full output: read_log {"id": "${log.id}"}`) : out;
  const header = `${status}; ${result.outputBytes} bytes of output${long ? ` (log ${log.id})` : ''}; ${(result.durationMs / 1000).toFixed(1)}s`;
  return {
    content: `${header}\n${shown || '(no output)'}`,
    // A failing command is information, not a tool failure: the model reads it and acts.
    isError: false,
    summary: `run_command ${JSON.stringify(cmd)} → ${status}, ${result.outputBytes} bytes${long ? ` (log ${log.id})` : ''}`,
  };
}

export async function readLog(t: ToolEnv, input: ToolInput<'read_log'>): Promise<ToolOutcome> {
  const page = await t.ctx.scratch.page(input.id, input.offset ?? 0).catch((err: Error) => {
    throw new ToolError(err.message);
  });
  return { content: page, isError: false, summary: `read_log ${input.id} @${input.offset ?? 0}` };
}
