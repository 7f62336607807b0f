import type { GitOptions } from './git.js';

/** A repository location split into what may be stored or shown, and what authenticates. */
export interface RemoteWithAuth {
  /** The location without credentials: the only form that reaches disk, the ledger or output. */
  url: string;
  /** For the git processes that talk to the remote (`GitOptions`); empty when there was nothing to split. */
  auth: Pick<GitOptions, 'remoteConfig'>;
}

// Git's own rule: the authority ends at the first '/', and userinfo ends at its last '@'.
const HTTP_AUTHORITY = /^(https?:\/\/)([^/]*)(.*)$/is;

/**
 * Takes the userinfo out of an http(s) URL (`user:password@`, or a token alone as `token@`)
 * and turns it into a basic-auth header that only the remote's git processes get, through
 * their environment. Paths and ssh locations are left as they are: an ssh user name is no
 * secret, and ssh authenticates with keys.
 */
export function splitRemoteCredentials(location: string): RemoteWithAuth {
  const m = HTTP_AUTHORITY.exec(location);
  const authority = m?.[2] ?? '';
  const at = authority.lastIndexOf('@');
  if (!m || at < 0) return { url: location, auth: {} };
  const userinfo = authority.slice(0, at);
  const url = `${m[1]}${authority.slice(at + 1)}${m[3]}`;
  if (userinfo === '') return { url, auth: {} };
  const colon = userinfo.indexOf(':');
  const user = decode(colon < 0 ? userinfo : userinfo.slice(0, colon));
  const password = colon < 0 ? '' : decode(userinfo.slice(colon + 1));
  const config = basicAuthConfig(url, user, password);
  return { url, auth: { remoteConfig: () => config } };
}

/**
 * Git config that sends basic auth to the remote's origin: an `http.<origin>/.extraHeader` for
 * `GitOptions.remoteConfig`, so the secret is never on a command line or in `.git/config`.
 */
export function basicAuthConfig(url: string, user: string, password: string): Record<string, string> {
  if (!/^https?:\/\//i.test(url)) return {};
  const origin = new URL(url).origin;
  const basic = Buffer.from(`${user}:${password}`).toString('base64');
  return { [`http.${origin}/.extraHeader`]: `AUTHORIZATION: basic ${basic}` };
}

/** Before a scheme-less userinfo: nothing that could be part of it, of a URL's path, or of a mask. */
const NOT_IN_URL = String.raw`(?<![\w.~%+\-/:@*])`;
/** After its '@': a host name (with a dot and a letter TLD) or localhost, so `npm:pkg@1.2.3` is not one. */
const HOST_NEXT = String.raw`(?=(?:[a-z0-9-]+\.)+[a-z]{2,}(?![\w-])|localhost(?![\w.-]))`;
/**
 * `user:secret@host` with its scheme cut off (`…ccess-token:ghs_x@github.com` from a tail whose
 * head was dropped), and a token alone before `@host`: a known token prefix or 32+ token characters.
 */
const SCHEMELESS_USERINFO = new RegExp(`${NOT_IN_URL}[\\w.~%+-]+:[^\\s/"<>]+@${HOST_NEXT}`, 'gi');
const SCHEMELESS_TOKEN = new RegExp(`${NOT_IN_URL}(?:(?:gh[pousr]|github_pat|npm)_\\w+|glpat-[\\w-]+|[\\w-]{32,})@${HOST_NEXT}`, 'gi');

/**
 * `text` with the userinfo of every http(s) URL in it masked, and the password of any other
 * URL: for error messages and output that may quote a location as it was given.
 */
export function redactUrls(text: string): string {
  // A quote ends a URL too: in a JSON log line, an '@' in a later field is not userinfo.
  return text
    .replace(/(https?:\/\/)[^\s/"<>]*@/gi, '$1***@')
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s/:@"<>]*):[^\s/"<>]*@/gi, '$1:***@')
    .replace(SCHEMELESS_USERINFO, '***@')
    .replace(SCHEMELESS_TOKEN, '***@');
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // not valid percent-encoding: git would send it as written
  }
}

/** Masks credentials in URLs in an error's message and stack, in place, before it is printed. */
export function redactError(err: unknown): void {
  if (!(err instanceof Error)) return;
  err.message = redactUrls(err.message);
  if (err.stack) err.stack = redactUrls(err.stack);
}
