import { createHash } from 'node:crypto';
import { plainText } from '../common/plain-text.js';

/**
 * A verification failure's output without what changes from run to run (durations, clocks, temp
 * and workspace paths, addresses, ids, pids, ports), so that two attempts that failed the same way
 * compare equal (`max_same_failure`). What tells failures apart — the assertion, the file and line,
 * the counts — is kept. Pure.
 */

export interface FailureSignatureOptions {
  /** The workspace's absolute path: replaced wherever it appears. */
  workspaceDir?: string;
}

/** The sha256 (hex) of the normalized output. */
export function failureSignature(output: string, opts: FailureSignatureOptions = {}): string {
  return createHash('sha256').update(normalizeFailure(output, opts)).digest('hex');
}

// Each pattern replaces one kind of noise; they run in this order (paths and clocks before the
// numbers inside them are read as durations or ids).
const SEGMENT = String.raw`[^\s/'"\`:)\]]+`;
const TEMP_DIR = new RegExp(String.raw`(?:/private)?(?:/var)?/tmp/(?:pytest-of-[^\s/]+/pytest-\d+|${SEGMENT})|(?:/private)?/var/folders/[^\s/]+/[^\s/]+/T/${SEGMENT}`, 'g');
const ISO_TIMESTAMP = /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g;
const CLOCK = /(?<![\d:])\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?![\d:])/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
// Short hex numbers (`0xff`) are values an assertion may compare; addresses are longer.
const HEX_ADDRESS = /\b0x[0-9a-f]{6,}\b/gi;
// Commit ids, hashes, random names; with a digit, so that long words are not read as hex.
const LONG_HEX = /(?<![\w<])(?=[0-9a-f]*\d)[0-9a-f]{12,}(?![\w>])/gi;
const PORT = /\b(127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1?\]):\d+\b/g;
const PID = /\b(pid[ =:]*)\d+\b/gi;
// `node[1234]:` (a process name, or the start of a line): not `expected [1234]`.
const BRACKET_PID = /(^|[A-Za-z_.-])\[\d+\](?=[:\s]|$)/gm;
const DURATION = /(?<![\w.:])(?:\d+h ?)?(?:\d+m ?)?\d+(?:[.,]\d+)? ?(?:ms|s|secs?|seconds?|µs|μs|us|ns|mins?|minutes?)(?![A-Za-z0-9_])|\(cached\)/g;

// A duration named by its key, the unit in the name (node --test's TAP `duration_ms: 12.5`).
const KEYED_DURATION = /\b((?:duration|elapsed|time)_?(?:ms|s|sec|seconds)?["']?(?::|=)?[ \t]*)\d+(?:\.\d+)?\b/gi;

const RULE_LINE = /([=_\-*~─━⎯])\1{3,}/g;

/** The output with the run-to-run noise replaced by placeholders, padding, trailing blanks and blank-line runs squeezed. */
export function normalizeFailure(output: string, opts: FailureSignatureOptions = {}): string {
  let text = plainText(output);
  const workspace = opts.workspaceDir?.replace(/\/+$/, '');
  if (workspace && workspace.length > 1) text = text.split(workspace).join('<workspace>');
  text = text
    .replace(TEMP_DIR, '<tmp>')
    .replace(ISO_TIMESTAMP, '<timestamp>')
    .replace(CLOCK, '<time>')
    .replace(UUID, '<uuid>')
    .replace(HEX_ADDRESS, '0x<addr>')
    .replace(LONG_HEX, '<hex>')
    .replace(PORT, '$1:<port>')
    .replace(PID, '$1<pid>')
    .replace(BRACKET_PID, '$1[<pid>]')
    .replace(DURATION, '<duration>')
    .replace(KEYED_DURATION, '$1<duration>')
    // Padding that follows the width of what was replaced: rules (pytest's `=====`) and aligned columns.
    .replace(RULE_LINE, '$1$1$1')
    .replace(/(?<=\S)[ \t]{2,}/g, ' ');
  // Trailing blanks line by line: a `[ \t]+$` regex is quadratic on a long run of blanks.
  return text
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .replace(/^\n+|\n+$/g, '');
}
