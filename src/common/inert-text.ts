import { plainText } from './plain-text.js';
import { headChars, sanitizeCode } from './untrusted.js';

/**
 * Untrusted text the bot writes where GitHub reads references and mentions: made inert with
 * invisible characters, so a reader sees it as written while GitHub links, closes and pings nothing.
 */

/**
 * Prose GitHub would turn into a link or a cross-reference (`#12`, `GH-12`, `owner/repo#12`, a
 * URL, `www.`, `…/issues/12`) with a word joiner (U+2060) inside: shown the same, linking nothing,
 * closing nothing.
 */
export function unlinked(text: string): string {
  return text
    .replace(/#(?=\d)/g, '#\u2060')
    .replace(/\b(GH)-(?=\d)/gi, '$1-\u2060')
    .replace(/:\/\//g, ':\u2060//')
    .replace(/\b(www)\./gi, '$1\u2060.')
    .replace(/\/(issues|pull|pulls|discussions)\/(?=\d)/gi, '/$1/\u2060');
}

/** `@user`, `@org/team` (and `owner/repo@sha`) with a zero-width space after the `@`: nobody is notified. */
export function unmentioned(text: string): string {
  return text.replace(/@/g, '@\u200b');
}

/**
 * One line of untrusted text for a place GitHub shows as plain text but scans for references:
 * a commit subject, a PR title. Escape sequences, control and hidden characters out, whitespace
 * (line breaks included) as single spaces, cut to `max` on a code-point boundary, then no
 * reference, link or mention left.
 */
export function inertLine(text: string, max: number): string {
  const one = sanitizeCode(plainText(text)).replace(/\s+/g, ' ').trim();
  return unmentioned(unlinked(one.length > max ? `${headChars(one, max - 1)}…` : one));
}
