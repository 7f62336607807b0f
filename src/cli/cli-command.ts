import { type Command, InvalidArgumentError } from 'commander';

/**
 * One `goal-loop` command: its arguments and options are defined once, on a commander Command,
 * and both its parsing and its `--help` come from that definition.
 */
export interface CliCommand {
  name: string;
  /** One line, for the list in `goal-loop --help`. */
  summary: string;
  /** What it does, for `goal-loop <name> --help` (paragraphs; the help wraps them). */
  description: string;
  /** One command line a person could type. */
  example: string;
  /** The usage line, when the options alone cannot say it (plan takes one of two). */
  usage?: string;
  /** Adds its arguments and options. */
  define(cmd: Command): void;
  /** Does the work with what `define` parsed; resolves to the exit code. */
  run(cmd: Command): Promise<number>;
}

/** A flag that may be given again, each value kept: `--approve a --approve b`. */
export function repeatable(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** An argument parser for a whole number of at least 1; `flag` names it in the error. */
export function wholeNumberFrom1(flag: string): (raw: string) => number {
  return (raw) => {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${flag} must be a whole number of at least 1.`);
    return n;
  };
}
