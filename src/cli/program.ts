import { Command, Help } from 'commander';
import { type CliCommand, repeatable } from './cli-command.js';
import { ACTION } from './commands/action.js';
import { CLEAN } from './commands/clean.js';
import { DEMO } from './commands/demo.js';
import { LOGS } from './commands/logs.js';
import { MCP } from './commands/mcp.js';
import { PLAN } from './commands/plan.js';
import { RUN } from './commands/run.js';
import { SERVE } from './commands/serve.js';
import { SHOW } from './commands/show.js';
import { STATUS } from './commands/status.js';
import { WORKER } from './commands/worker.js';
import { packageVersion } from './version.js';

/** Every `goal-loop` command, in the order `goal-loop --help` lists them. */
export const CLI_COMMANDS: readonly CliCommand[] = [RUN, PLAN, STATUS, LOGS, SHOW, CLEAN, SERVE, WORKER, ACTION, MCP, DEMO];

const EXIT_CODES = `Exit codes: 0 complete, 1 bad input or usage, 2 escalated, 3 stopped (by a safeguard,
a human or Ctrl-C), paused, or waiting for an approval, 4 internal error (the goal FAILED),
130 a second Ctrl-C.`;

/**
 * The `goal-loop` program: each command's parsing and its help come from its CliCommand. It never
 * exits the process: a parse error, --help or --version throws a CommanderError with the exit
 * code, and its message is left to the caller (which masks URL credentials in it).
 * `exit` receives the exit code of the command that ran.
 */
export function buildProgram(exit: (code: number) => void): Command {
  const version = packageVersion();
  const program = new GoalLoopCommand('goal-loop')
    .usage('<command> [options]')
    .description('Works a goal (tasks, each with a verification) on a git repository: every verified task is pushed as a checkpoint commit, and a stopped goal resumes from them.')
    .version(version, '-V, --version', 'print the goal-loop version and exit')
    .helpOption('-h, --help', 'print this help and exit (the command does not start)')
    .helpCommand('help [command]', "print a command's help (or this one)")
    .enablePositionalOptions()
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({ outputError: () => undefined })
    .addHelpText('after', `\n${EXIT_CODES}\n\ngoal-loop <command> --help prints its options and an example.\n\nExample:\n  goal-loop plan --goal examples/demo-goal.yml`);
  for (const c of CLI_COMMANDS) {
    const cmd = program.command(c.name).summary(c.summary).description(c.description);
    c.define(cmd);
    cmd.version(version, '-V, --version', 'print the goal-loop version and exit').usage(c.usage ?? synopsis(cmd));
    requireAfterUnknownOptions(cmd);
    cmd.addHelpText('after', `\nExample:\n  ${c.example}`).action(async () => exit(await c.run(cmd)));
  }
  return program;
}

/**
 * Commander checks required options before it looks for unknown ones, so `run --hepl` would say
 * "--repo not specified". A typo is the likelier mistake: the required ones are checked just
 * before the action, after the unknown ones.
 */
function requireAfterUnknownOptions(cmd: Command): void {
  const required = cmd.options.filter((o) => o.mandatory);
  for (const o of required) o.mandatory = false;
  cmd.hook('preAction', () => {
    const missing = required.find((o) => cmd.getOptionValue(o.attributeName()) === undefined);
    if (missing) cmd.error(`error: required option '${missing.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
  });
}

/** The usage line, from the command's definition: `<arg> --required <v> [--optional <v>] [--repeatable <v>]...`. */
function synopsis(cmd: Command): string {
  const words = cmd.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`));
  for (const o of cmd.options) {
    if (!o.long || o.long === '--version') continue;
    const value = o.argChoices ? ` ${o.argChoices.join('|')}` : o.flags.slice(o.flags.indexOf(o.long) + o.long.length);
    const word = `${o.long}${value}`;
    words.push(o.mandatory ? word : `[${word}]${o.parseArg === repeatable ? '...' : ''}`);
  }
  return words.join(' ');
}

/** Commander's help, lower-case `usage:` as before, the usage wrapped under itself, the command list one line each. */
class GoalLoopHelp extends Help {
  override styleTitle(title: string): string {
    return title === 'Usage:' ? 'usage:' : title;
  }

  override commandUsage(cmd: Command): string {
    const names = cmd.parent ? `${cmd.parent.name()} ${cmd.name()}` : cmd.name();
    // A bracketed group, or a flag with its value, stays on one line.
    const words = cmd.usage().match(/\[[^\]]*\](?:\.\.\.)?|\([^)]*\)|--\S+ <[^>]*>|\S+/g) ?? [];
    const width = Math.max(60, this.helpWidth ?? 80);
    const indent = ' '.repeat('usage: '.length + names.length + 1);
    const lines: string[] = [];
    const head = `usage: ${names}`;
    let line = head;
    for (const word of words) {
      if (line !== head && line.length + 1 + word.length > width) {
        lines.push(line);
        line = `${indent}${word}`;
      } else line += ` ${word}`;
    }
    lines.push(line);
    return lines.join('\n').slice('usage: '.length);
  }

  override subcommandTerm(cmd: Command): string {
    return [cmd.name(), ...cmd.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`))].join(' ');
  }
}

class GoalLoopCommand extends Command {
  override createCommand(name?: string): Command {
    return new GoalLoopCommand(name);
  }

  override createHelp(): Help {
    return Object.assign(new GoalLoopHelp(), this.configureHelp());
  }
}
