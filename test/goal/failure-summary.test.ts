import { describe, expect, it } from 'vitest';
import { setupNetworkHint } from '../../src/goal/failure-summary.js';

describe('setupNetworkHint: why setup could not reach a registry, and what to set', () => {
  const npmCert = 'npm error code SELF_SIGNED_CERT_IN_CHAIN\nnpm error request to https://registry.npmjs.org/x failed, reason: self-signed certificate in certificate chain';
  const pipCert = 'SSLError(SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate"';
  it.each([
    ['npm behind a TLS-intercepting proxy, nothing passed', npmCert, true, [], /setup_env: \[NODE_EXTRA_CA_CERTS\]/],
    ['pip behind it', pipCert, true, [], /REQUESTS_CA_BUNDLE/],
    ['a CA variable passed, still refused', npmCert, true, ['NODE_EXTRA_CA_CERTS'], /although setup got NODE_EXTRA_CA_CERTS/],
    ['no network in the config', 'npm error code ENOTFOUND\nnpm error getaddrinfo ENOTFOUND registry.npmjs.org', false, [], /network: setup/],
    ['network, but a proxy is needed', 'curl: (6) Could not resolve host: pypi.org', true, [], /HTTPS_PROXY/],
  ] as const)('%s', (_name, output, network, names, hint) => {
    expect(setupNetworkHint(output, network, names)).toMatch(hint);
  });

  it('says nothing about an ordinary failure', () => {
    expect(setupNetworkHint('npm error code ERESOLVE\nnpm error could not resolve dependency', true, [])).toBeUndefined();
  });
});
