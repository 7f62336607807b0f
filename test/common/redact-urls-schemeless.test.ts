import { describe, expect, it } from 'vitest';
import { redactUrls } from '../../src/common/redact-urls.js';

describe('redactUrls: credentials whose scheme was cut off', () => {
  it('masks user:secret@host and a token alone before @host, when a cut dropped the https://', () => {
    expect(redactUrls('…ccess-token:ghs_SECRET@github.com/o/r.git')).toBe('…***@github.com/o/r.git');
    expect(redactUrls('fetch ci:npm_SECRET@registry.corp.example/pkg failed')).toBe('fetch ***@registry.corp.example/pkg failed');
    expect(redactUrls('ghs_SECRET@github.com/o/r')).toBe('***@github.com/o/r');
    expect(redactUrls(`${'a1'.repeat(20)}@localhost:8080/x`)).toBe('***@localhost:8080/x');
    expect(redactUrls('https://ci:npm_SECRET@registry.corp.example/pkg')).toBe('https://***@registry.corp.example/pkg');
  });

  it('leaves what is no credential: an ssh location, an e-mail address, a package alias, a masked URL', () => {
    for (const t of ['git@github.com:o/r.git', 'mail alice@example.com', '"react": "npm:preact@10.19.2"', 'pnpm add workspace:pkg@1.2.3', 'ssh://git:***@h/r', 'https://***@host/r.git'])
      expect(redactUrls(t)).toBe(t);
  });
});
