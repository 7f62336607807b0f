import { describe, expect, it } from 'vitest';
import { SETUP_README, type SetupFailureContext, setupFailureHint, unpassedProxyNames } from '../../src/goal/setup-hint.js';

const ctx = (c: Partial<SetupFailureContext> = {}): SetupFailureContext => ({
  command: 'pnpm install --frozen-lockfile',
  network: true,
  passedNames: [],
  unpassedHostNames: [],
  timedOut: false,
  stalled: false,
  ...c,
});

describe('setupFailureHint: the likely cause of a failed setup, with the README section', () => {
  it.each([
    ['pnpm', ' ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with "frozen-lockfile" because pnpm-lock.yaml is not up to date with package.json'],
    [
      'npm ci',
      'npm error code EUSAGE\nnpm error `npm ci` can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync. Please update your lock file with `npm install` before continuing.\nnpm error Missing: left-pad@1.3.0 from lock file',
    ],
    ['yarn classic', 'error Your lockfile needs to be updated, but yarn was run with `--frozen-lockfile`.'],
    ['yarn berry', '➤ YN0028: │ The lockfile would have been modified by this install, which is explicitly forbidden.'],
  ])('a lockfile out of date (%s)', (_manager, output) => {
    const hint = setupFailureHint(output, ctx({ network: false }));
    expect(hint).toMatch(/^hint: the lockfile is out of date/);
    expect(hint).toContain(SETUP_README.lockfile);
  });

  it('a refused certificate: the CA variable to pass, and the proxy section', () => {
    const hint = setupFailureHint('npm error code SELF_SIGNED_CERT_IN_CHAIN', ctx());
    expect(hint).toContain('setup_env: [NODE_EXTRA_CA_CERTS]');
    expect(hint).toContain(SETUP_README.proxy);
  });

  it('a stalled install behind a proxy: names the CA and proxy variables set on the host and not passed', () => {
    const hint = setupFailureHint('Progress: resolved 442, reused 0, downloaded 0, added 0', ctx({ stalled: true, unpassedHostNames: ['NODE_EXTRA_CA_CERTS', 'HTTPS_PROXY'] }));
    expect(hint).toMatch(/^hint: setup stalled, likely behind a proxy: HTTPS_PROXY, NODE_EXTRA_CA_CERTS are set here but not passed/);
    expect(hint).toContain('`setup_env: [HTTPS_PROXY, NODE_EXTRA_CA_CERTS]`');
    expect(hint).toContain(SETUP_README.proxy);
  });

  it('names the CA variables the command reads, not every bundle the host sets (all of them for a command it cannot tell)', () => {
    const host = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'];
    const names = (command: string) => /setup_env: \[([^\]]*)\]/.exec(setupFailureHint('', ctx({ stalled: true, command, unpassedHostNames: host })) ?? '')?.[1];
    expect(names('pnpm install --frozen-lockfile')).toBe('NODE_EXTRA_CA_CERTS');
    expect(names('corepack yarn install')).toBe('NODE_EXTRA_CA_CERTS');
    expect(names('pip install -r requirements.txt')).toBe('SSL_CERT_FILE, REQUESTS_CA_BUNDLE, PIP_CERT');
    expect(names('cargo fetch')).toBe('SSL_CERT_FILE, CURL_CA_BUNDLE');
    expect(names('./scripts/bootstrap.sh')).toBe(host.join(', '));
    // A node tool on a host whose only bundle is one node does not read: named all the same.
    expect(setupFailureHint('', ctx({ stalled: true, command: 'npm ci', unpassedHostNames: ['SSL_CERT_FILE'] }))).toContain('`setup_env: [SSL_CERT_FILE]`');
  });

  it('a timed-out install with no network: the config says `network: none`', () => {
    const hint = setupFailureHint('', ctx({ network: false, timedOut: true, command: 'npm ci' }));
    expect(hint).toMatch(/^hint: setup timed out without the network: .*`network: setup`/);
    expect(hint).toContain(SETUP_README.stalled);
  });

  it('no network and a registry error in the output', () => {
    expect(setupFailureHint('npm error code ENOTFOUND', ctx({ network: false }))).toMatch(/no network unless the repo config says `network: setup`/);
  });

  it('a stalled install with nothing else known: the registry is likely unreachable', () => {
    const hint = setupFailureHint('', ctx({ stalled: true, command: 'yarn install --immutable' }));
    expect(hint).toMatch(/^hint: setup stalled while installing: the registry is likely unreachable/);
    expect(hint).toContain(SETUP_README.stalled);
  });

  it('a stalled command that installs nothing gets the section only', () => {
    expect(setupFailureHint('', ctx({ stalled: true, command: './scripts/prepare.sh' }))).toBe(`hint: setup stalled. See ${SETUP_README.stalled}`);
  });

  it('no hint for an ordinary failure', () => {
    expect(setupFailureHint('npm error code ERESOLVE\nnpm error could not resolve dependency', ctx())).toBeUndefined();
    expect(setupFailureHint('make: *** [all] Error 2', ctx({ command: 'make' }))).toBeUndefined();
  });
});

describe('unpassedProxyNames', () => {
  it('lists the proxy and CA variables set on the host that setup_env does not name', () => {
    const host = { HTTPS_PROXY: 'http://p:3128', NODE_EXTRA_CA_CERTS: '/etc/corp.pem', SSL_CERT_FILE: '', HOME: '/root' };
    expect(unpassedProxyNames(host, ['HTTPS_PROXY'])).toEqual(['NODE_EXTRA_CA_CERTS']);
    expect(unpassedProxyNames(host, [])).toEqual(['HTTPS_PROXY', 'NODE_EXTRA_CA_CERTS']);
  });
});

describe('the README sections the hints link', () => {
  it('exist, as GitHub makes their anchors', async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const anchors = [...readme.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, '')
        .replace(/ /g, '-'),
    );
    for (const url of Object.values(SETUP_README)) expect(anchors).toContain(url.slice(url.indexOf('#') + 1));
  });
});
