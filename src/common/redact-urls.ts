/**
 * Masking credentials in URLs quoted in text, in time linear in the text: it runs over every log
 * line, and a log line can quote what a stranger sent. Regexes with a quantified prefix before a
 * test that fails (`[a-z][a-z0-9+.-]*:\/\/` over a run of letters) restart at every position of
 * the run, so 40,000 letters took seconds. Each pass below visits a character a bounded number of
 * times; the only regexes are a literal and single character classes, which cannot backtrack.
 */

/** A run of characters that may be part of a URL's authority: up to whitespace, '/', a quote, '<' or '>'. */
const URL_RUN = /[^\s/"<>]*/y;
/** A URL's host part after `scheme://`: also up to ':' or '@'. */
const HOST_RUN = /[^\s/:@"<>]*/y;
const HTTP_SCHEME = /https?:\/\//gi;
/** A token short of 32 characters is one only with a known prefix (tested on at most 31 characters). */
const KNOWN_TOKEN = /^(?:(?:gh[pousr]|github_pat|npm)_\w+|glpat-[\w-]+)$/i;

const AT = 0x40;
const COLON = 0x3a;
const DOT = 0x2e;
const UNDERSCORE = 0x5f;

/**
 * `text` with the userinfo of every http(s) URL in it masked, and the password of any other
 * URL: for error messages and output that may quote a location as it was given.
 */
export function redactUrls(text: string): string {
  // A quote ends a URL too: in a JSON log line, an '@' in a later field is not userinfo.
  return maskSchemelessTokens(maskSchemelessUserinfo(maskOtherPasswords(maskHttpUserinfo(text))));
}

/** `http(s)://…@` → `http(s)://***@`, up to the last '@' before the authority ends. */
function maskHttpUserinfo(text: string): string {
  let out = '';
  let last = 0;
  HTTP_SCHEME.lastIndex = 0;
  while (HTTP_SCHEME.exec(text)) {
    const from = HTTP_SCHEME.lastIndex;
    const at = lastAt(text, from, runEnd(URL_RUN, text, from));
    if (at < 0) continue; // no scheme can start before `from`: "http://" holds no 'h' after its first
    out += `${text.slice(last, from)}***@`;
    last = at + 1;
    HTTP_SCHEME.lastIndex = last;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** `scheme://user:password@` → `scheme://user:***@`, for any scheme. */
function maskOtherPasswords(text: string): string {
  let out = '';
  let last = 0;
  for (let k = text.indexOf('://'); k >= 0; k = text.indexOf('://', k + 1)) {
    // A scheme is a letter, then letters, digits, '+', '.', '-': so a letter in the run before "://".
    let letter = false;
    for (let i = k; i > last && isSchemeChar(text.charCodeAt(i - 1)); i--) letter ||= isLetter(text.charCodeAt(i - 1));
    if (!letter) continue;
    const hostEnd = runEnd(HOST_RUN, text, k + 3);
    if (text.charCodeAt(hostEnd) !== COLON) continue;
    const at = lastAt(text, hostEnd + 1, runEnd(URL_RUN, text, hostEnd + 1));
    if (at < 0) continue;
    out += `${text.slice(last, hostEnd)}:***@`;
    last = at + 1;
    k = at;
  }
  return last === 0 ? text : out + text.slice(last);
}

/**
 * `user:secret@host` with its scheme cut off (`…ccess-token:ghs_x@github.com` from a tail whose
 * head was dropped) → `***@host`: a user name that starts where nothing of a URL or a mask is
 * before it, a ':', then up to the last '@' before a host name (with a dot and a letter TLD, or
 * localhost), so `npm:pkg@1.2.3` is not one.
 */
function maskSchemelessUserinfo(text: string): string {
  let out = '';
  let last = 0;
  // The authority run the secret is in, and its last '@' before a host: shared by every user name in it.
  let runFrom = -1;
  let runTo = -1;
  let hostAt = -1;
  for (let i = 0; i < text.length; ) {
    if (!isUserChar(text.charCodeAt(i))) {
      i++;
      continue;
    }
    const start = i;
    while (isUserChar(text.charCodeAt(i))) i++;
    const secret = i + 1;
    if (inUrlBefore(text, start) || text.charCodeAt(i) !== COLON) continue;
    if (secret < runFrom || secret >= runTo) {
      runFrom = secret;
      runTo = runEnd(URL_RUN, text, secret);
      hostAt = lastAtBeforeHost(text, secret + 1, runTo);
    }
    if (hostAt < secret + 1) continue; // the secret is at least one character
    out += `${text.slice(last, start)}***@`;
    last = hostAt + 1;
    i = last;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** A token alone before `@host` → `***@host`: a known token prefix, or 32+ token characters. */
function maskSchemelessTokens(text: string): string {
  let out = '';
  let last = 0;
  for (let i = 0; i < text.length; ) {
    if (!isTokenChar(text.charCodeAt(i))) {
      i++;
      continue;
    }
    const start = i;
    while (isTokenChar(text.charCodeAt(i))) i++;
    const end = i;
    if (inUrlBefore(text, start) || text.charCodeAt(end) !== AT || !hostNameAt(text, end + 1)) continue;
    if (end - start < 32 && !KNOWN_TOKEN.test(text.slice(start, end))) continue;
    out += `${text.slice(last, start)}***@`;
    last = end + 1;
    i = last;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** Where the run of `re` (a sticky single class) that starts at `from` ends. */
function runEnd(re: RegExp, text: string, from: number): number {
  re.lastIndex = from;
  re.exec(text);
  return re.lastIndex;
}

/** The last '@' in [from, to), or -1 (never looks before `from`, unlike `lastIndexOf`). */
function lastAt(text: string, from: number, to: number): number {
  for (let i = to - 1; i >= from; i--) if (text.charCodeAt(i) === AT) return i;
  return -1;
}

/** The last '@' in [from, to) that a host name follows, or -1. Each check stops at the next '@'. */
function lastAtBeforeHost(text: string, from: number, to: number): number {
  for (let i = to - 1; i >= from; i--) if (text.charCodeAt(i) === AT && hostNameAt(text, i + 1)) return i;
  return -1;
}

/** Whether the character before `at` may be part of a URL, a user name or a mask (`[\w.~%+\-/:@*]`). */
function inUrlBefore(text: string, at: number): boolean {
  if (at === 0) return false;
  const c = text.charCodeAt(at - 1);
  return isUserChar(c) || c === 0x2f || c === COLON || c === AT || c === 0x2a;
}

/**
 * Whether a host name starts at `at`: labels of letters, digits and '-' joined by dots, ending in
 * a label of 2+ letters that no word character or '-' follows (`a.example.com`), or `localhost`
 * followed by none of those nor a dot. Reads only as far as such characters go.
 */
function hostNameAt(text: string, at: number): boolean {
  if (isWord(text, at, 'localhost')) {
    const c = text.charCodeAt(at + 9);
    if (!(isWordChar(c) || c === DOT || c === 0x2d)) return true;
  }
  let i = at;
  for (let labels = 0; ; labels++) {
    const start = i;
    let letters = true;
    for (let c = text.charCodeAt(i); isAlnum(c) || c === 0x2d; c = text.charCodeAt(++i)) letters &&= isLetter(c);
    if (i === start) return false; // an empty label
    // Here the next character is none of [A-Za-z0-9-]: only '_' would still be a word character.
    if (labels >= 1 && letters && i - start >= 2 && text.charCodeAt(i) !== UNDERSCORE) return true;
    if (text.charCodeAt(i) !== DOT) return false;
    i++;
  }
}

/** `word` (lower-case ASCII) at `at`, ASCII letters in either case. */
function isWord(text: string, at: number, word: string): boolean {
  if (at + word.length > text.length) return false;
  for (let i = 0; i < word.length; i++) if (lowerAscii(text.charCodeAt(at + i)) !== word.charCodeAt(i)) return false;
  return true;
}

const lowerAscii = (c: number) => (c >= 0x41 && c <= 0x5a ? c + 0x20 : c);
const isLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isAlnum = (c: number) => isLetter(c) || (c >= 0x30 && c <= 0x39);
const isWordChar = (c: number) => isAlnum(c) || c === UNDERSCORE;
/** What a scheme-less user name may be made of: `[\w.~%+-]`. */
const isUserChar = (c: number) => isWordChar(c) || c === DOT || c === 0x7e || c === 0x25 || c === 0x2b || c === 0x2d;
/** What a scheme-less token may be made of: `[\w-]`. */
const isTokenChar = (c: number) => isWordChar(c) || c === 0x2d;
const isSchemeChar = (c: number) => isAlnum(c) || c === 0x2b || c === DOT || c === 0x2d;

/** Masks credentials in URLs in an error's message and stack, in place, before it is printed. */
export function redactError(err: unknown): void {
  if (!(err instanceof Error)) return;
  err.message = redactUrls(err.message);
  if (err.stack) err.stack = redactUrls(err.stack);
}
