import type { Responses } from './responses.js';
import type { State } from './state.js';
import type { FakeGitHubOptions } from './types.js';
import { errorBody, type Reply, userJson } from './util.js';

/** Who a request comes from, by its `Authorization` header. */
export type Caller =
  | { kind: 'none' }
  | { kind: 'app-jwt' }
  | { kind: 'installation'; expired: boolean }
  /** The workflow token acting as an integration (a workflow's GITHUB_TOKEN). */
  | { kind: 'workflow' }
  /** The workflow token acting as a personal access token (`tokenUser`). */
  | { kind: 'user'; login: string }
  | { kind: 'unknown'; token: string };

/**
 * The fake's notion of authentication: the installation tokens it issued, the static workflow
 * token of an Actions run (an integration, or a user's personal access token with `tokenUser`),
 * and what GitHub answers each on GET /user.
 */
export function createAuth(opts: FakeGitHubOptions, ctx: State & Responses) {
  const { tokenExpiry, botLogin, json } = ctx;

  function callerOf(headers: Record<string, string>): Caller {
    const auth = headers.authorization ?? '';
    if (auth === '') return { kind: 'none' };
    if (/^bearer\s+\S+\.\S+\.\S+$/i.test(auth)) return { kind: 'app-jwt' };
    const token = auth.replace(/^(token|bearer)\s+/i, '');
    if (opts.workflowToken !== undefined && token === opts.workflowToken) return opts.tokenUser ? { kind: 'user', login: opts.tokenUser } : { kind: 'workflow' };
    const exp = tokenExpiry.get(token);
    if (exp !== undefined) return { kind: 'installation', expired: exp < Date.now() };
    return { kind: 'unknown', token };
  }

  /** What strictAuth reports for a request: an app JWT on /app routes, an issued token or the workflow token elsewhere. */
  function authViolations(method: string, pathname: string, isTokenExchange: boolean, headers: Record<string, string>): string[] {
    const auth = headers.authorization ?? '';
    const caller = callerOf(headers);
    if (isTokenExchange || pathname === '/app' || pathname.startsWith('/app/')) {
      return caller.kind === 'app-jwt' ? [] : [`${method} ${pathname}: expected an app JWT (Bearer), got "${auth.slice(0, 12)}…"`];
    }
    if (caller.kind === 'installation') return caller.expired ? [`${method} ${pathname}: installation token expired`] : [];
    if (caller.kind === 'workflow' || caller.kind === 'user') return [];
    const token = caller.kind === 'unknown' ? caller.token : '';
    return [
      `${method} ${pathname}: not authenticated with an installation token from the fake${opts.workflowToken !== undefined ? ' nor its workflow token' : ''}${/^ghs_f\d+i/.test(token) ? ' (a token of another fake: a request left running by an earlier test)' : ''}`,
    ];
  }

  /** The login a request's writes are by: the token's user for a personal access token, the app's bot otherwise. */
  function writerOf(caller: Caller): string {
    return caller.kind === 'user' ? caller.login : botLogin;
  }

  /** GET /user: a personal access token's user; 403 to an integration (installation or workflow token), as GitHub answers. */
  function routeUser(method: string, url: URL, caller: Caller): Reply | undefined {
    if (method !== 'GET' || url.pathname !== '/user') return undefined;
    if (caller.kind === 'user') return json(200, authenticatedUserJson(caller.login));
    if (caller.kind === 'none') return json(401, { ...errorBody('Requires authentication', 401), documentation_url: DOCS_USER });
    if (caller.kind === 'unknown' && opts.strictAuth) return json(401, { ...errorBody('Bad credentials', 401), documentation_url: 'https://docs.github.com/rest' });
    return json(403, { ...errorBody('Resource not accessible by integration', 403), documentation_url: DOCS_USER });
  }

  return { callerOf, authViolations, writerOf, routeUser };
}

const DOCS_USER = 'https://docs.github.com/rest/users/users#get-the-authenticated-user';

/** A user as GET /user shows it to that user's own token: the public profile (GitHub's `public-user`). */
function authenticatedUserJson(login: string): Record<string, unknown> {
  return {
    ...userJson(login),
    user_view_type: 'public',
    name: null,
    company: null,
    blog: '',
    location: null,
    email: null,
    hireable: null,
    bio: null,
    public_repos: 1,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: '2024-01-01T00:00:00Z',
    updated_at: '2024-01-01T00:00:00Z',
  };
}
