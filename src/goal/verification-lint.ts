import { formatSpecError } from './parse.js';
import type { GoalSpec } from './schema.js';

/**
 * Verifications that cannot fail (`true`, `npm test || true`, `echo done` …) prove nothing: a task
 * "passes" them before any change. This reads the command as bash would split it (quotes,
 * substitutions, comments, redirections, `( … )` and `{ …; }` groups) and follows the exit status
 * through `;`, `&&`, `||`, `|` and `&`. Anything it does not understand (`if`, `case`, loops …)
 * counts as able to fail: a flag must be certain. Pure.
 */

const RULE = 'a verification must fail before the task and pass after it';
const MAX_COMMAND = 10_000;
const MAX_DEPTH = 32;

/** One line per task whose verification cannot fail, named by path and task id as spec errors are. */
export function verificationFlags(spec: Pick<GoalSpec, 'tasks'>): string[] {
  return spec.tasks.flatMap((task, i) => {
    const why = cannotFailReason(task.verification);
    return why === undefined ? [] : [verificationFlagMessage(i, task.id, why)];
  });
}

/** The flag of `tasks[index]`, worded as a spec validation error. */
export function verificationFlagMessage(index: number, taskId: string | undefined, why: string): string {
  return formatSpecError({ path: `tasks[${index}].verification`, message: `cannot fail (${why}): ${RULE}`, ...(taskId !== undefined ? { taskId } : {}) });
}

/** Why `command` always exits 0 (e.g. `"|| true" at the end`), or undefined when it can fail. */
export function cannotFailReason(command: string): string | undefined {
  // Untrusted text: a long or deeply nested command is not judged rather than read slowly.
  if (command.length > MAX_COMMAND) return undefined;
  const tokens = tokenize(command);
  if (!tokens) return undefined;
  const parser = new Parser(tokens);
  const outcome = parser.list(undefined, true);
  if (!outcome || !parser.done()) return undefined;
  return outcome.ok ? outcome.why : undefined;
}

// ---------------------------------------------------------------------------------------------
// Tokens

type Op = '&&' | '||' | ';' | '\n' | '|' | '&' | '(' | ')';
type Token = { kind: 'word'; value: string; literal: boolean } | { kind: 'op'; op: Op } | { kind: 'redirect' };

const BLANK = /[ \t\r]/;
const WORD_END = /[\s;&|()<>]/;

/** Splits a command into words, operators and redirections; undefined for what bash could not parse either. */
function tokenize(src: string): Token[] | undefined {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (BLANK.test(c)) {
      i += 1;
    } else if (c === '\\' && src[i + 1] === '\n') {
      i += 2; // a line continuation
    } else if (c === '#') {
      while (i < src.length && src[i] !== '\n') i += 1; // a comment (only where a word could start)
    } else if (c === '\n' || c === ';' || c === '(' || c === ')') {
      if (c === ';' && src[i + 1] === ';') return undefined; // `;;` belongs to `case`
      tokens.push({ kind: 'op', op: c });
      i += 1;
    } else if (c === '&' || c === '|') {
      const two = src.slice(i, i + 2);
      if (two === '&&' || two === '||') {
        tokens.push({ kind: 'op', op: two });
        i += 2;
      } else if (two === '&>') {
        i = redirection(src, i + 1, tokens);
      } else {
        tokens.push({ kind: 'op', op: c });
        i += two === '|&' ? 2 : 1;
      }
    } else if (c === '<' || c === '>') {
      i = redirection(src, i, tokens);
    } else {
      const word = readWord(src, i, 0);
      if (!word) return undefined;
      // An all-digit word right before `<` or `>` is the redirection's file descriptor (`2>&1`).
      if (/^\d+$/.test(word.value) && /[<>]/.test(src[word.end] ?? '')) {
        i = redirection(src, word.end, tokens);
      } else {
        tokens.push({ kind: 'word', value: word.value, literal: word.literal });
        i = word.end;
      }
    }
  }
  return tokens;
}

/** A redirection at `i` (`>`, `>>`, `>&2`, `<&-`, `>|` …): one token; its target is the next word. */
function redirection(src: string, start: number, tokens: Token[]): number {
  let i = start + 1;
  if (/[<>|]/.test(src[i] ?? '')) i += 1;
  if (src[i] === '&') {
    i += 1;
    while (/[\d-]/.test(src[i] ?? '')) i += 1;
    tokens.push({ kind: 'redirect' });
    return i;
  }
  tokens.push({ kind: 'redirect' });
  // The target: the next word (skipped, as redirections never change the command's name).
  while (BLANK.test(src[i] ?? '')) i += 1;
  const word = i < src.length && !WORD_END.test(src[i]!) ? readWord(src, i, 0) : undefined;
  return word ? word.end : i;
}

/** One word from `start`: its unquoted value, and whether it holds no expansion (`$…`, backticks). */
function readWord(src: string, start: number, depth: number): { value: string; literal: boolean; end: number } | undefined {
  if (depth > MAX_DEPTH) return undefined;
  let value = '';
  let literal = true;
  let i = start;
  while (i < src.length && !WORD_END.test(src[i]!)) {
    const c = src[i]!;
    if (c === '\\') {
      value += src[i + 1] ?? '';
      i += 2;
    } else if (c === "'") {
      const close = src.indexOf("'", i + 1);
      if (close < 0) return undefined;
      value += src.slice(i + 1, close);
      i = close + 1;
    } else if (c === '"') {
      i += 1;
      while (i < src.length && src[i] !== '"') {
        if (src[i] === '\\') {
          value += src[i + 1] ?? '';
          i += 2;
        } else if (src[i] === '$' || src[i] === '`') {
          const end = expansionEnd(src, i, depth);
          if (end === undefined) return undefined;
          literal = false;
          value += src.slice(i, end);
          i = end;
        } else {
          value += src[i];
          i += 1;
        }
      }
      if (i >= src.length) return undefined;
      i += 1;
    } else if (c === '$' || c === '`') {
      const end = expansionEnd(src, i, depth);
      if (end === undefined) return undefined;
      literal = false;
      value += src.slice(i, end);
      i = end;
    } else {
      value += c;
      i += 1;
    }
  }
  return { value, literal, end: i };
}

/** The end of the `$…` or backtick expansion at `i`: `$(…)`, `$((…))`, `${…}`, `$NAME`, `` `…` ``. */
function expansionEnd(src: string, i: number, depth: number): number | undefined {
  if (src[i] === '`') {
    for (let j = i + 1; j < src.length; j++) {
      if (src[j] === '\\') j += 1;
      else if (src[j] === '`') return j + 1;
    }
    return undefined;
  }
  const open = src[i + 1];
  if (open === '(' || open === '{') return balancedEnd(src, i + 1, open, open === '(' ? ')' : '}', depth + 1);
  const name = /^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9?!#$*@-])/.exec(src.slice(i + 1));
  return i + 1 + (name ? name[0].length : 0);
}

/** The index after the bracket that closes the one at `i`, skipping quotes and nested expansions. */
function balancedEnd(src: string, i: number, open: string, close: string, depth: number): number | undefined {
  let level = 0;
  for (let j = i; j < src.length; j++) {
    const c = src[j]!;
    if (c === '\\') j += 1;
    else if (c === "'") {
      const end = src.indexOf("'", j + 1);
      if (end < 0) return undefined;
      j = end;
    } else if (c === '"') {
      const word = readWord(src, j, depth);
      if (!word) return undefined;
      j = word.end - 1;
    } else if (c === open) level += 1;
    else if (c === close) {
      level -= 1;
      if (level === 0) return j + 1;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Exit status

/** What a piece of the command exits with: `ok` when always 0, and why (for the message). */
interface Outcome {
  ok: boolean;
  why: string;
  /** The piece is one simple command: how the message names it (`true`, `exit 0`, `echo …`). */
  label?: string;
  /** An unconditional `exit`: what follows never runs. */
  exits?: boolean;
}

const MAYBE: Outcome = { ok: false, why: '' };
const RESERVED = new Set(['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', 'for', 'case', 'esac', 'select', 'function', 'in', '!']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;
const ALWAYS_OK = new Set(['true', ':', '/bin/true', '/usr/bin/true', 'echo', 'printf']);

class Parser {
  private i = 0;
  private depth = 0;
  /** Options the command set so far (bash -c starts with both off). */
  private errexit = false;
  private pipefail = false;
  constructor(private readonly tokens: Token[]) {}

  done(): boolean {
    return this.i >= this.tokens.length;
  }

  /**
   * A list: and-or lists separated by `;`, `&` or newlines, up to `close` (`)` or the word `}`).
   * `prevOk` is whether `$?` is 0 when it starts (a bare `exit` exits with it).
   */
  list(close: ')' | '}' | undefined, prevOk: boolean): Outcome | undefined {
    let status: Outcome = { ok: prevOk, why: '' };
    let seen = 0;
    let exited: Outcome | undefined;
    let failsEarly = false; // under `set -e`, a failing command before the end ends the script
    while (true) {
      this.skipSeparators();
      if (this.done() || this.atClose(close)) break;
      const andOr = this.andOr(status.ok);
      if (!andOr) return undefined;
      let result = andOr;
      if (this.peekOp('&')) {
        this.i += 1;
        result = { ok: true, why: '"&" runs it in the background' };
      } else if (seen > 0 && result.label !== undefined && result.ok) {
        result = { ...result, why: `"; ${result.label}" at the end` };
      }
      if (this.errexit && !result.ok && !exited) failsEarly = true;
      // `exit 0` before the end: what follows it never runs.
      if (!exited && result.exits) exited = !result.ok ? { ...MAYBE, exits: true } : this.atEnd(close) || result.label === undefined ? result : { ...result, why: `"${result.label}" before the end` };
      status = result;
      seen += 1;
    }
    if (seen === 0) return undefined; // an empty list (or group) is a syntax error
    if (failsEarly) return MAYBE;
    return exited ?? { ok: status.ok, why: status.why, ...(seen === 1 && status.label !== undefined ? { label: status.label } : {}) };
  }

  /** Pipelines joined by `&&` and `||`. */
  private andOr(prevOk: boolean): Outcome | undefined {
    let left = this.pipeline(prevOk);
    if (!left) return undefined;
    while (true) {
      const op = this.peekOp('&&') ? '&&' : this.peekOp('||') ? '||' : undefined;
      if (!op) return left;
      this.i += 1;
      while (this.peekOp('\n')) this.i += 1;
      // The right side runs after the left succeeded (`&&`) or failed (`||`): that is its `$?`.
      const right = this.pipeline(op === '&&');
      if (!right) return undefined;
      if (op === '&&') left = left.ok && right.ok ? { ok: true, why: right.why } : MAYBE;
      else if (left.ok) left = { ok: true, why: left.why };
      else left = right.ok ? { ok: true, why: right.label !== undefined ? `"|| ${right.label}" at the end` : right.why } : MAYBE;
    }
  }

  /** Commands joined by `|`: the last one's status is the pipeline's (with `set -o pipefail`, any failure's). */
  private pipeline(prevOk: boolean): Outcome | undefined {
    let last = this.command(prevOk);
    let piped = false;
    let allOk = last?.ok ?? false;
    while (last && this.peekOp('|')) {
      this.i += 1;
      while (this.peekOp('\n')) this.i += 1;
      last = this.command(false);
      allOk &&= last?.ok ?? false;
      piped = true;
    }
    if (!last || !piped) return last;
    return last.ok && (allOk || !this.pipefail) ? { ok: true, why: last.label !== undefined ? `"| ${last.label}" at the end` : last.why } : MAYBE;
  }

  /** A simple command, or a `( … )` / `{ …; }` group (its status is its list's). */
  private command(prevOk: boolean): Outcome | undefined {
    const first = this.tokens[this.i];
    const subshell = first?.kind === 'op' && first.op === '(';
    if (subshell || (first?.kind === 'word' && first.value === '{' && first.literal)) {
      const close = subshell ? ')' : '}';
      this.i += 1;
      if (++this.depth > MAX_DEPTH) return undefined;
      const inner = this.list(close, prevOk);
      this.depth -= 1;
      if (!inner || !(subshell ? this.peekOp(')') : this.atClose('}'))) return undefined;
      this.i += 1;
      this.skipRedirections();
      // `exit` in a subshell ends the subshell only; in a `{ …; }` group it ends the command.
      return { ok: inner.ok, why: inner.why, ...(!subshell && inner.exits ? { exits: true } : {}) };
    }
    const words: Array<{ value: string; literal: boolean }> = [];
    for (let t = this.tokens[this.i]; t && t.kind !== 'op'; t = this.tokens[this.i]) {
      if (t.kind === 'word') words.push(t);
      this.i += 1;
    }
    // Leading assignments (`CI=1 npm test`) do not name the command.
    const args = words.slice(words.findIndex((w) => !ASSIGNMENT.test(w.value)));
    const name = args.length > 0 && !ASSIGNMENT.test(args[0]!.value) ? args[0]! : undefined;
    if (!name) return undefined; // no command here: `;` first, `&& &&`, or assignments alone
    if (!name.literal) return MAYBE; // `$TEST_CMD`: whatever it is
    // A compound command (`if`, loops, `case` …) is not followed: no judgement on the whole.
    if (RESERVED.has(name.value) || name.value === '}') return undefined;
    if (name.value === 'exit') return this.exit(args.slice(1), prevOk);
    if (name.value === 'set') return this.set(args.slice(1));
    if (!ALWAYS_OK.has(name.value)) return MAYBE;
    const label = name.value === 'echo' || name.value === 'printf' ? `${name.value} …` : name.value;
    return { ok: true, why: `"${label}" alone`, label };
  }

  /** `exit` ends the shell: with 0 (`exit 0`), with `$?` (bare `exit`), else with a failure. */
  private exit(args: Array<{ value: string; literal: boolean }>, prevOk: boolean): Outcome {
    if (args.length === 0) return prevOk ? { ok: true, why: '"exit" alone', label: 'exit', exits: true } : { ...MAYBE, exits: true };
    const code = args[0]!;
    if (args.length === 1 && code.literal && /^0+$/.test(code.value)) return { ok: true, why: '"exit 0" alone', label: 'exit 0', exits: true };
    return { ...MAYBE, exits: true };
  }

  /** `set -e`, `set -o errexit`, `set -o pipefail` (and their `+` forms) change what can fail; `set` itself succeeds. */
  private set(args: Array<{ value: string; literal: boolean }>): Outcome {
    args.forEach((arg, k) => {
      const flags = /^([-+])([a-zA-Z]*)$/.exec(arg.value);
      if (!flags) return;
      const on = flags[1] === '-';
      if (flags[2]!.includes('e')) this.errexit = on;
      if (flags[2]!.endsWith('o')) {
        const option = args[k + 1]?.value;
        if (option === 'errexit') this.errexit = on;
        if (option === 'pipefail') this.pipefail = on;
      }
    });
    return { ok: true, why: '"set" alone', label: 'set …' };
  }

  private skipSeparators(): void {
    while (this.peekOp(';') || this.peekOp('\n')) this.i += 1;
  }

  /** Redirections after a group (their targets were read with them). */
  private skipRedirections(): void {
    while (this.tokens[this.i]?.kind === 'redirect') this.i += 1;
  }

  private peekOp(op: Op): boolean {
    const t = this.tokens[this.i];
    return t?.kind === 'op' && t.op === op;
  }

  private atClose(close: ')' | '}' | undefined): boolean {
    if (close === ')') return this.peekOp(')');
    const t = this.tokens[this.i];
    return close === '}' && t?.kind === 'word' && t.value === '}' && t.literal;
  }

  /** Only separators are left before the end of this list. */
  private atEnd(close: ')' | '}' | undefined): boolean {
    let j = this.i;
    for (let t = this.tokens[j]; t?.kind === 'op' && (t.op === ';' || t.op === '\n'); t = this.tokens[j]) j += 1;
    const saved = this.i;
    this.i = j;
    const end = this.done() || this.atClose(close);
    this.i = saved;
    return end;
  }
}
