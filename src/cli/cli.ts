import { RepoConfigError } from '../config/repo-config.js';
import { SpecValidationError, formatSpecError } from '../goal/parse.js';
import { EXIT } from '../loop/result.js';
import { LedgerOpenError } from '../ports/ledger.js';
import { SandboxUnavailableError } from '../ports/sandbox.js';
import { MCP_USAGE, mcpCommand } from './commands/mcp.js';
import { PLAN_USAGE, planCommand } from './commands/plan.js';
import { RUN_USAGE, runCommand } from './commands/run.js';
import { SERVE_USAGE, serveCommand } from './commands/serve.js';
import { STATUS_USAGE, statusCommand } from './commands/status.js';
import { WORKER_USAGE, workerCommand } from './commands/worker.js';
import { InputError, UsageError } from './errors.js';
import { LockedError } from './lock.js';
import { redactError } from '../workspace/remote-auth.js';

const USAGE = `usage: goal-loop <command> [options]

${RUN_USAGE}

${PLAN_USAGE}

${STATUS_USAGE}

${SERVE_USAGE}

${MCP_USAGE}

${WORKER_USAGE}

Exit codes: 0 complete, 1 bad input or usage, 2 escalated, 3 stopped by a safeguard, 4 internal error.`;

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  run: runCommand,
  plan: planCommand,
  status: statusCommand,
  serve: serveCommand,
  mcp: mcpCommand,
  worker: workerCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return name ? EXIT.complete : EXIT.badInput;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`goal-loop: unknown command "${name}"\n\n${USAGE}\n`);
    return EXIT.badInput;
  }
  try {
    return await command(rest);
  } catch (err) {
    redactError(err); // a URL given with credentials may be quoted in it
    if (err instanceof SpecValidationError) {
      const [only] = err.errors;
      if (err.errors.length === 1 && only) process.stderr.write(`goal-loop: invalid goal spec ${err.source}: ${formatSpecError(only)}\n`);
      else process.stderr.write(`goal-loop: invalid goal spec ${err.source}\n${err.errors.map((e) => `  ${formatSpecError(e)}`).join('\n')}\n`);
      return EXIT.badInput;
    }
    if (err instanceof UsageError || isParseArgsError(err)) {
      process.stderr.write(`goal-loop: ${(err as Error).message}\nRun \`goal-loop help\` for usage.\n`);
      return EXIT.badInput;
    }
    if (err instanceof RepoConfigError) {
      process.stderr.write(`goal-loop: ${err.message}\n`);
      return EXIT.badInput;
    }
    if (err instanceof InputError || err instanceof LedgerOpenError) {
      process.stderr.write(`goal-loop: ${err.message}\n`);
      return EXIT.badInput;
    }
    if (err instanceof SandboxUnavailableError) {
      process.stderr.write(`goal-loop: ${err.message}\n`);
      return EXIT.badInput;
    }
    if (err instanceof LockedError) {
      process.stderr.write(`goal-loop: ${err.message}\n`);
      return EXIT.badInput;
    }
    process.stderr.write(`goal-loop: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT.internal;
  }
}

function isParseArgsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string' && String((err as unknown as { code: string }).code).startsWith('ERR_PARSE_ARGS');
}

