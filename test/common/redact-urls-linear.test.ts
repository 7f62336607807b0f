import { describe, expect, it } from 'vitest';
import { redactUrls } from '../../src/common/redact-urls.js';
import { callWithDeadline } from '../helpers/deadline.js';

// redactUrls runs over every log line (pino's streamWrite hook), and a log line can quote what a
// stranger sent. The regexes it once used backtracked: 40,000 letters took 1.8 s, 8 MB would take
// hours. These inputs are 8 MB each; a linear scan takes well under a second on each, so the 20 s
// bound is a margin of thousands over what linear needs, and of thousands under what quadratic takes.
const MB = 1024 * 1024;
const SIZE = 8 * MB;
const fill = (unit: string, prefix = '', suffix = '') => prefix + unit.repeat(Math.ceil((SIZE - prefix.length - suffix.length) / unit.length)) + suffix;
const ADVERSARIAL: Record<string, string> = {
  'a run of letters': fill('a'),
  'letters after http://': fill('a', 'http://'),
  'letters after a scheme': fill('b', 'a://'),
  'word characters and dots': fill('a1.'),
  'a long password run with no @': fill('!a:', 'a:'),
  'many @ that start no host': fill('!a:@', 'a:'),
  'a host name that never ends in a TLD': fill('a1.', 'u:p@'),
  'a token run with no @': fill('a-'),
  'many schemes, no host': fill('a:/'),
  'many http:// with @ far away': fill('http:/', '', '@host.com'),
  'userinfo runs separated by !': fill('u:p!'),
};

describe('redactUrls is linear: 8 MB adversarial inputs', () => {
  for (const [name, input] of Object.entries(ADVERSARIAL)) {
    it(`attack: ${name}`, async () => {
      const r = await callWithDeadline('dist/src/common/redact-urls.js', 'redactUrls', [input], 20_000);
      expect(r).toMatchObject({ ok: true });
    });
  }
});

// The regexes redactUrls used before it became a scan: the reference for what it masks.
const NOT_IN_URL = String.raw`(?<![\w.~%+\-/:@*])`;
const HOST_NEXT = String.raw`(?=(?:[a-z0-9-]+\.)+[a-z]{2,}(?![\w-])|localhost(?![\w.-]))`;
const SCHEMELESS_USERINFO = new RegExp(`${NOT_IN_URL}[\\w.~%+-]+:[^\\s/"<>]+@${HOST_NEXT}`, 'gi');
const SCHEMELESS_TOKEN = new RegExp(`${NOT_IN_URL}(?:(?:gh[pousr]|github_pat|npm)_\\w+|glpat-[\\w-]+|[\\w-]{32,})@${HOST_NEXT}`, 'gi');
function referenceRedact(text: string): string {
  return text
    .replace(/(https?:\/\/)[^\s/"<>]*@/gi, '$1***@')
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s/:@"<>]*):[^\s/"<>]*@/gi, '$1:***@')
    .replace(SCHEMELESS_USERINFO, '***@')
    .replace(SCHEMELESS_TOKEN, '***@');
}

/** A small deterministic generator (mulberry32), so a failure names a reproducible input. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  'http',
  'https',
  'HTTPS',
  '://',
  ':',
  '/',
  '@',
  '.',
  'a',
  'b',
  'Z',
  '1',
  '-',
  '_',
  '~',
  '%',
  '+',
  '*',
  '!',
  ' ',
  '"',
  '<',
  '\n',
  'com',
  'io',
  'localhost',
  'ghp_',
  'glpat-',
  'npm_',
  'github_pat_',
  'x'.repeat(33),
  'é',
  'ssh',
  'git',
];

describe('redactUrls masks exactly what the old regexes masked', () => {
  it('on 20,000 random URL-like strings', () => {
    const next = random(25);
    for (let i = 0; i < 20_000; i++) {
      const n = 1 + Math.floor(next() * 24);
      let s = '';
      for (let j = 0; j < n; j++) s += PIECES[Math.floor(next() * PIECES.length)];
      expect(redactUrls(s), JSON.stringify(s)).toBe(referenceRedact(s));
    }
  });

  it('on realistic lines', () => {
    const lines = [
      '{"level":50,"msg":"git fetch https://x-access-token:ghs_abc@github.com/o/r.git failed","remote":"https://u:p@h.example.com/r","email":"a@b.co"}',
      "fatal: unable to access 'https://u:p@ss@host/r.git/': 401",
      'see HTTP://TOK@host.com and ssh://git:pw@h/r and git+ssh://u:x@y@z.example.org/r',
      'npm ERR! fetch ci:npm_SECRET@registry.corp.example/pkg 401; mail alice@example.com; react npm:preact@10.19.2',
      `${'a1'.repeat(20)}@localhost:8080/x and glpat-abc-def@gitlab.example.com/g`,
    ];
    for (const l of lines) expect(redactUrls(l), l).toBe(referenceRedact(l));
  });
});
