/**
 * Git config that authenticates one git process against GitHub with an installation token:
 * an `http.<url>.extraHeader`, passed through GIT_CONFIG_* variables by our git runner, so the
 * token is never on a command line, in `.git/config`, or in the sandbox.
 */
export function tokenHeaderConfig(cloneUrl: string, token: string): Record<string, string> {
  if (!/^https?:\/\//i.test(cloneUrl)) return {}; // local paths (tests) need no auth
  const origin = new URL(cloneUrl).origin;
  const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
  return { [`http.${origin}/.extraHeader`]: `AUTHORIZATION: basic ${basic}` };
}
