import { CommanderError } from 'commander';
import { redactError, redactUrls } from '../common/redact-urls.js';
import { EXIT } from '../goal/result.js';
import { buildProgram, CLI_COMMANDS } from './program.js';

export async function main(argv: string[]): Promise<number> {
  const known = (command: string | undefined) => CLI_COMMANDS.some((c) => c.name === command);
  // `help <typo>` is a typo of a command: answered as one, with its "did you mean".
  const args = argv[0] === 'help' && argv[1] !== undefined && !known(argv[1]) ? argv.slice(1) : argv;
  const name = known(args[0]) ? args[0] : undefined;
  let code: number = EXIT.complete;
  const program = buildProgram((c) => (code = c));
  try {
    await program.parseAsync(args, { from: 'user' });
    return code;
  } catch (err) {
    redactError(err); // a URL given with credentials may be quoted in it
    if (err instanceof CommanderError) return commanderExit(err, name);
    // Loaded only on this path: the error classes bring the spec and config parsers (zod, yaml) with them.
    const { exitForError } = await import('./exit-for-error.js');
    return exitForError(err, helpHint(name));
  }
}

/**
 * --help and --version have been printed: exit 0. A bad command line gets one line, masked (commander
 * quotes what it was given), with the nearest command or flag when there is one, and where the help is.
 */
function commanderExit(err: CommanderError, command: string | undefined): number {
  if (err.exitCode === 0) return EXIT.complete;
  if (err.code === 'commander.help') return EXIT.badInput; // no command: the overview went to stderr
  const [what = '', ...more] = err.message.replace(/^error: /, '').split('\n');
  const suggestion = /^\(Did you mean (.*)\?\)$/.exec(more.join(' ').trim())?.[1];
  const line = `${what.replace(/\.$/, '')}${suggestion ? ` (did you mean ${suggestion}?)` : ''}`;
  process.stderr.write(`${redactUrls(`goal-loop${command ? ` ${command}` : ''}: ${line}`)} ${helpHint(command)}\n`);
  return EXIT.badInput;
}

function helpHint(command: string | undefined): string {
  return `(see \`goal-loop${command ? ` ${command}` : ''} --help\`)`;
}
