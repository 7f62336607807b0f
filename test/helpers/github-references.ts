/**
 * What GitHub would act on in text the bot wrote, read the way GitHub reads it (conservatively:
 * a little wider than GitHub, never narrower).
 *
 * Closing references (commit messages reaching the default branch, PR bodies): a keyword
 * close/closes/closed/fix/fixes/fixed/resolve/resolves/resolved, an optional colon, then `#N`,
 * `GH-N`, `owner/repo#N` or an issue/PR URL (with or without its scheme).
 */
const KEYWORD = String.raw`\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b\s*:?\s*`;
const REFERENCE = String.raw`(?:#\d+|GH-\d+|[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+#\d+|(?:https?:\/\/)?[A-Za-z0-9.-]+\/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+\/(?:issues|pull)\/\d+)`;

export function closingReferences(text: string): string[] {
  return [...text.matchAll(new RegExp(`${KEYWORD}${REFERENCE}`, 'gi'))].map((m) => m[0]);
}

/** `@user` and `@org/team`: an `@` not inside a word, then a login's first character. */
export function mentions(text: string): string[] {
  return [...text.matchAll(/(?<![A-Za-z0-9_`])@[A-Za-z0-9][A-Za-z0-9-]*(?:\/[A-Za-z0-9][\w.-]*)?/g)].map((m) => m[0]);
}

/** Any cross-reference GitHub links: `#N`, `GH-N`, `owner/repo#N`, `owner/repo@sha`, and URLs (`://`, `www.`). */
export function references(text: string): string[] {
  return [...text.matchAll(new RegExp(`${REFERENCE}|:\\/\\/|\\bwww\\.`, 'gi'))].map((m) => m[0]);
}

/** Markdown that would render as a link or an image: `[x](…)`, `![i](…)`, `<https://…>`, not backslash-escaped. */
export function liveMarkup(md: string): string[] {
  return [...md.matchAll(/(?<!\\)!?(?<!\\)\[[^\]\n]*(?<!\\)\]\(|<[a-z]+:\/\/|<[a-z]+:\u2060?\/\//gi)].map((m) => m[0]);
}

/** Everything above, for a message or a comment that must be inert. */
export function liveReferences(text: string): string[] {
  return [...closingReferences(text), ...mentions(text), ...references(text), ...liveMarkup(text)];
}
