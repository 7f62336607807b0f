import { RepoConfigError } from '../config/repo-config.js';
import { SpecValidationError, formatSpecError } from '../goal/parse.js';
import { EXIT } from '../goal/result.js';
import { LedgerOpenError } from '../ports/ledger.js';
import { SandboxUnavailableError } from '../ports/sandbox.js';
import { demoCommand } from './commands/demo.js';
import { logsCommand } from './commands/logs.js';
import { mcpCommand } from './commands/mcp.js';
import { planCommand } from './commands/plan.js';
import { runCommand } from './commands/run.js';
import { serveCommand } from './commands/serve.js';
import { statusCommand } from './commands/status.js';
import { workerCommand } from './commands/worker.js';
import { InputError, UsageError } from '../common/errors.js';
import { commandHelp, OVERVIEW } from './help.js';
import { LockedError } from '../run/lock.js';
import { packageVersion } from './version.js';
import { redactError } from '../common/redact-urls.js';

const USAGE = OVERVIEW.trimEnd();

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  run: runCommand,
  plan: planCommand,
  status: statusCommand,
  logs: logsCommand,
  serve: serveCommand,
  mcp: mcpCommand,
  worker: workerCommand,
  demo: demoCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V') {
    process.stdout.write(`${packageVersion()}\n`);
    return EXIT.complete;
  }
  if (name === 'help' && rest[0] !== undefined) return main([rest[0], '--help']);
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return name ? EXIT.complete : EXIT.badInput;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`goal-loop: unknown command "${name}"\n\n${USAGE}\n`);
    return EXIT.badInput;
  }
  // Answered here, before the command parses its flags: --help never starts a server or reads stdin.
  const asked = helpOrVersion(rest);
  if (asked === 'help') {
    process.stdout.write(commandHelp(name));
    return EXIT.complete;
  }
  if (asked === 'version') {
    process.stdout.write(`${packageVersion()}\n`);
    return EXIT.complete;
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
      process.stderr.write(`${usageErrorLine(name, err as Error)}\n`);
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

/** `--help`/`-h` or `--version`/`-V` anywhere among a command's flags (before a `--`), first one wins. */
function helpOrVersion(args: string[]): 'help' | 'version' | undefined {
  for (const arg of args) {
    if (arg === '--') return undefined;
    if (arg === '--help' || arg === '-h') return 'help';
    if (arg === '--version' || arg === '-V') return 'version';
  }
  return undefined;
}

/**
 * One line for a bad command line. Node's own text for an unknown flag talks about positional
 * arguments, which no command takes: say plainly which flag is unknown.
 */
function usageErrorLine(command: string, err: Error): string {
  const hint = `(see \`goal-loop ${command} --help\`)`;
  const unknown = (err as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /^Unknown option '([^']*)'/.exec(err.message) : null;
  if (unknown) return `goal-loop ${command}: unknown option '${unknown[1]}' ${hint}`;
  return `goal-loop: ${(err.message.split('\n')[0] ?? '').replace(/^goal-loop /, '')} ${hint}`;
}

function isParseArgsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string' && String((err as unknown as { code: string }).code).startsWith('ERR_PARSE_ARGS');
}

