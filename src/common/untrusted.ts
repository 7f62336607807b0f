/**
 * Issue, comment and review text is untrusted data: strip what hides content from a human
 * reader (HTML comments, zero-width and bidi control characters) before it is used or quoted.
 */
export function sanitizeUntrusted(text: string): string {
  return text
    .replace(/<!--[\s\S]*?(-->|$)/g, '')
    .replace(/[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u00AD]/g, '')
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g, '');
}

/** Quotes untrusted text as a markdown block quote, so it can never read as our own words. */
export function quoteUntrusted(text: string, maxChars = 4000): string {
  let clean = sanitizeUntrusted(text).trim();
  if (clean.length > maxChars) clean = `${clean.slice(0, maxChars)}…`;
  return clean
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
}
