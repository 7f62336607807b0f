const INVISIBLE = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u00AD]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters untrusted text must not carry
const CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g;

/**
 * Issue, comment and review text is untrusted data: strip what hides content from a human
 * reader (HTML comments, zero-width and bidi control characters) before it is used or quoted.
 * Comments are removed until none is left, so what a removal joins (`<!<!---->--`) never forms
 * one either.
 */
export function sanitizeUntrusted(text: string): string {
  return stripComments(text.replace(INVISIBLE, '').replace(CONTROLS, ''));
}

/**
 * Every HTML comment (`<!--` up to the next `-->`, or to the end) out, including those that
 * form when one is taken out, in one pass: the kept text is a stack, and a `<!--` that appears
 * at its top, from the input or by joining, opens a comment. (Removing comments until nothing
 * changed took a pass per level of nesting: quadratic on `<!<!<!---->-->-->`.)
 */
function stripComments(text: string): string {
  if (!text.includes('<!')) return text;
  const kept: string[] = [];
  for (let i = 0; i < text.length; ) {
    kept.push(text[i++]!);
    const n = kept.length;
    if (n >= 4 && kept[n - 1] === '-' && kept[n - 2] === '-' && kept[n - 3] === '!' && kept[n - 4] === '<') {
      kept.length = n - 4;
      const close = text.indexOf('-->', i);
      i = close < 0 ? text.length : close + 3;
    }
  }
  return kept.join('');
}

/** `<!--` made literal (U+200C between `<!` and `--`): it can never open a comment or form a marker. */
export function neutraliseComments(text: string): string {
  return text.replace(/<!--/g, '<!\u200c--');
}

/**
 * Untrusted text for a code span or a fenced block of our markdown: hidden characters out, but
 * HTML comments kept (inert in code, and what ran must show in full), with `<!--` neutralised.
 */
export function sanitizeCode(text: string): string {
  return neutraliseComments(text.replace(INVISIBLE, '').replace(CONTROLS, ''));
}

/** Untrusted text for prose in our markdown: comments stripped (until stable), then no `<!--` left. */
export function sanitizeProse(text: string): string {
  return neutraliseComments(sanitizeUntrusted(text));
}

/** The first `max` UTF-16 units of `text`, one fewer rather than half a surrogate pair. */
export function headChars(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max > 0 && /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max;
  return text.slice(0, end);
}

/** The last `max` UTF-16 units of `text`, one fewer rather than half a surrogate pair. */
export function tailChars(text: string, max: number): string {
  if (text.length <= max) return text;
  const start = text.length - max;
  return text.slice(/[\uDC00-\uDFFF]/.test(text[start]!) ? start + 1 : start);
}

/** A string's size as GitHub counts its limits: UTF-8 bytes. */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Quotes untrusted text as a markdown block quote, so it can never read as our own words. */
export function quoteUntrusted(text: string, maxChars = 4000): string {
  let clean = sanitizeUntrusted(text).trim();
  if (clean.length > maxChars) clean = `${headChars(clean, maxChars)}…`;
  return clean
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
}
