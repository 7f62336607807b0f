import type { LoopResult } from '../goal/result.js';
import { runGoal } from '../loop/controller.js';
import { type ComposeGoalRunInput, composeGoalRun } from './compose-goal-run.js';

/**
 * The one entry point of a goal run, for `goal-loop run`, the MCP server, the App's worker and the
 * benchmarks: composes the run from the repo config and the spec (the sandbox chosen once, unless
 * the caller already holds it; the goal's clone; the limits in force, computed once), runs the
 * loop, and always closes what the composition opened (an agent's MCP servers), whether the run
 * ends, fails or is abandoned.
 */
export async function runConfiguredGoal(input: ComposeGoalRunInput): Promise<LoopResult> {
  const run = await composeGoalRun(input);
  try {
    return await runGoal(run.options);
  } finally {
    // A server that will not stop is worth a warning, never the run's result.
    await run.close().catch((err: unknown) => input.logger.warn({ err }, "cannot stop the agent's MCP servers"));
  }
}
