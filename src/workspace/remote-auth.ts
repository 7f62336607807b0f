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

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // not valid percent-encoding: git would send it as written
  }
}
