import { describe, expect, it } from 'vitest';
import { redactError, redactUrls } from '../../src/common/redact-urls.js';
import { repoArgument, workspaceDir } from '../../src/run/paths.js';
import { splitRemoteCredentials } from '../../src/workspace/remote-auth.js';

const header = (user: string, password: string) => `AUTHORIZATION: basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

async function configOf(location: string) {
  return splitRemoteCredentials(location).auth.remoteConfig?.();
}

describe('splitRemoteCredentials', () => {
  it('turns user:password in an http(s) URL into a header for that origin only', async () => {
    const split = splitRemoteCredentials('https://u:p%40ss@Git.Example.com:8443/o/r.git');
    expect(split.url).toBe('https://Git.Example.com:8443/o/r.git');
    expect(await configOf('https://u:p%40ss@Git.Example.com:8443/o/r.git')).toEqual({ 'http.https://git.example.com:8443/.extraHeader': header('u', 'p@ss') });
  });

  it('treats a token alone as a secret, and x-access-token:TOKEN too', async () => {
    expect(splitRemoteCredentials('https://ghp_abc@github.com/o/r.git').url).toBe('https://github.com/o/r.git');
    expect(await configOf('https://ghp_abc@github.com/o/r.git')).toEqual({ 'http.https://github.com/.extraHeader': header('ghp_abc', '') });
    expect(await configOf('https://x-access-token:ghs_x@github.com/o/r.git')).toEqual({ 'http.https://github.com/.extraHeader': header('x-access-token', 'ghs_x') });
  });

  it('splits at the last @ before the first /, as git does', () => {
    expect(splitRemoteCredentials('http://u:a@b#c@host/r.git').url).toBe('http://host/r.git');
    expect(splitRemoteCredentials('http://host/r@x.git').url).toBe('http://host/r@x.git');
  });

  it('leaves paths, ssh and credential-free URLs exactly as given, with no auth', () => {
    for (const location of ['/srv/repo.git', 'git@github.com:o/r.git', 'ssh://git@host:22/o/r.git', 'https://github.com/o/r.git', 'file:///srv/r.git']) {
      expect(splitRemoteCredentials(location)).toEqual({ url: location, auth: {} });
    }
  });

  it('gives the same workspace to a repository with and without credentials', () => {
    const withCreds = repoArgument('https://u:secret@host/o/r.git');
    const without = repoArgument('https://host/o/r.git');
    expect(withCreds.repo).toBe(without.repo);
    expect(workspaceDir('/ws', withCreds.repo, 'g')).toBe(workspaceDir('/ws', without.repo, 'g'));
    expect(without.auth).toEqual({});
  });

  it('refuses secrets the split cannot take out: a query or fragment, a password outside http(s)', () => {
    for (const bad of ['https://host/o/r.git?token=s3cret', 'https://u:p@host/r.git#s3cret', 'ssh://git:s3cret@host/r.git', 'ftp://u:s3cret@host/r.git']) {
      expect(() => repoArgument(bad), bad).toThrow(/--repo: .*refused/);
      try {
        repoArgument(bad);
      } catch (err) {
        expect((err as Error).message).not.toContain('s3cret');
      }
    }
    for (const ok of ['ssh://git@host:22/o/r.git', 'git@host:o/r.git', 'https://host:8443/o/r.git']) expect(() => repoArgument(ok), ok).not.toThrow();
  });
});

describe('redactUrls', () => {
  it('masks the userinfo of http(s) URLs and the password of others, wherever they are quoted', () => {
    expect(redactUrls("fatal: unable to access 'https://u:p@ss@host/r.git/': 401")).toBe("fatal: unable to access 'https://***@host/r.git/': 401");
    expect(redactUrls('--repo http://tok@h/r.git and ssh://git:pw@h/r')).toBe('--repo http://***@h/r.git and ssh://git:***@h/r');
    expect(redactUrls('ssh://git@host/r.git git@host:r.git https://host/r.git')).toBe('ssh://git@host/r.git git@host:r.git https://host/r.git');
  });

  it('does not take an @ in a later JSON field for userinfo', () => {
    const line = '{"remote":"https://host/r.git","email":"a@b.c"}';
    expect(redactUrls(line)).toBe(line);
    expect(redactUrls('{"remote":"https://u:pw@host/r.git"}')).toBe('{"remote":"https://***@host/r.git"}');
  });

  it("masks an error's message and stack in place", () => {
    const err = new Error('cannot reach https://u:pw@host/r.git');
    redactError(err);
    expect(err.message).toBe('cannot reach https://***@host/r.git');
    expect(err.stack).not.toContain('pw');
  });
});
