import { unlinked, unmentioned } from '../../common/inert-text.js';
import { plainText } from '../../common/plain-text.js';
import { redactUrls } from '../../common/redact-urls.js';
import { headChars, sanitizeCode, sanitizeProse } from '../../common/untrusted.js';

/**
 * Untrusted text (a repository's output, a task's command, a model's words) made inert in our
 * markdown. Every string of the attempt record goes through one of these: `fenced` for blocks of
 * output, `code` for a short inline quote, `htmlText` inside our own HTML (`<summary>`); prose
 * goes through status-comment.ts `inlineUntrusted`.
 */

/**
 * For code (fences, code spans): escape sequences and control characters out, hidden characters
 * out, credentials masked; HTML comments kept (inert in code: what ran shows in full), `<!--` neutralised.
 */
export function clean(text: string): string {
  return redactUrls(sanitizeCode(plainText(text)));
}

/** For prose (our HTML): as `clean`, but HTML comments stripped. */
function cleanProse(text: string): string {
  return redactUrls(sanitizeProse(plainText(text)));
}

function longestRun(text: string, ch: string): number {
  let longest = 0;
  let run = 0;
  for (const c of text) {
    run = c === ch ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  return longest;
}

/**
 * A fenced code block whose fence is longer than any backtick run inside it: nothing in it can
 * close it, so no markup, mention or `</details>` in the text is ever read as markdown or HTML.
 */
export function fenced(text: string, info = 'text'): string {
  const body = clean(text).replace(/^\n+|\s+$/g, '');
  const fence = '`'.repeat(Math.max(3, longestRun(body, '`') + 1));
  return `${fence}${info}\n${body}\n${fence}`;
}

/** One line of untrusted text as an inline code span (delimited by a longer backtick run), shortened to `max`. */
export function code(text: string, max = 120): string {
  let one = clean(text).replace(/\s+/g, ' ').trim();
  if (one.length > max) one = `${headChars(one, max - 1)}…`;
  if (!one) return '` `';
  const tick = '`'.repeat(longestRun(one, '`') + 1);
  const pad = one.startsWith('`') || one.endsWith('`') ? ' ' : '';
  return `${tick}${pad}${one}${pad}${tick}`;
}

/** One line of untrusted text inside our HTML (a `<summary>`): entities for markup, no mention, no reference or link. */
export function htmlText(text: string, max = 120): string {
  let one = cleanProse(text).replace(/\s+/g, ' ').trim();
  if (one.length > max) one = `${headChars(one, max - 1)}…`;
  return unlinked(unmentioned(one.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')));
}

/** The last `n` lines of an output, without the blanks a tool pads its lines with (they would fill the room). */
export function lastLines(text: string, n: number): string {
  const lines = text
    .trimEnd()
    .split('\n')
    .map((l) => l.trimEnd());
  return lines.length <= n ? lines.join('\n') : ['…', ...lines.slice(-n)].join('\n');
}

/** A commit sha as a link to it (a sha that is not hex is quoted, not linked). */
export function commitLink(sha: string, repoUrl: string): string {
  return /^[0-9a-f]{7,64}$/.test(sha) ? `[\`${sha.slice(0, 7)}\`](${repoUrl}/commit/${sha})` : code(sha, 64);
}
