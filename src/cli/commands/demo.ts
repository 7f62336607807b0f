import { parseArgs, type ParseArgsConfig } from 'node:util';
import { runDemo } from '../../demo/demo.js';
import { CLI_MAIN, cliInvocation } from '../invocation.js';

export const DEMO_USAGE = `goal-loop demo

  Runs the bundled goal (examples/demo-goal.yml: four tasks, one repaired on its second attempt)
  end to end on a fresh sample repository, with the scripted agent: no API key, no database
  server. It keeps the repository, its own ledger and the workspaces in one temporary folder,
  and prints the commands that show the checkpoints and each attempt, and how to delete it.`;

/** The flags `demo` accepts: none. */
export const DEMO_OPTIONS = {} as const satisfies NonNullable<ParseArgsConfig['options']>;

export async function demoCommand(argv: string[]): Promise<number> {
  parseArgs({ args: argv, options: DEMO_OPTIONS, strict: true, allowPositionals: false });
  return runDemo({ cli: CLI_MAIN, prog: cliInvocation() });
}
