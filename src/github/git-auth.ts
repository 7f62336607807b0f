import { basicAuthConfig } from '../workspace/remote-auth.js';

/**
 * Git config that authenticates one git process against GitHub with an installation token:
 * an `http.<url>.extraHeader`, passed through GIT_CONFIG_* variables by our git runner, so the
 * token is never on a command line, in `.git/config`, or in the sandbox.
 */
export function tokenHeaderConfig(cloneUrl: string, token: string): Record<string, string> {
  return basicAuthConfig(cloneUrl, 'x-access-token', token); // local paths (tests) need no auth
}
