import { describe, expect, it } from 'vitest';
import { sanitizeUntrusted } from '../../src/common/untrusted.js';
import { callWithDeadline } from '../helpers/deadline.js';

/** Comments nested so that removing one forms the next: `<!<!<!---->-->-->`. */
function nested(depth: number): string {
  let s = '<!---->';
  for (let i = 0; i < depth; i++) s = `<!${s}-->`;
  return s;
}

// Issue, comment and review text (anyone's) goes through these. Removing comments "until nothing
// changes" took one pass per level of nesting: quadratic, seconds for one 64 KB comment.
describe('untrusted text is sanitised in linear time', () => {
  it('attack: comments nested 300,000 deep (1.5 MB)', async () => {
    const r = await callWithDeadline('dist/src/common/untrusted.js', 'sanitizeUntrusted', [`a${nested(300_000)}b`], 20_000);
    // What the iterative removal leaves too (see below, on smaller depths): halves of openers, never one.
    expect(r).toEqual({ ok: true, value: `a${'<!'.repeat(150_000)}b` });
  });

  it('attack: 8 MB of escape-sequence openers for plainText', async () => {
    for (const unit of ['\x1b[0', '\x1b]a', '\x1b[0;', '\x1b[ ']) {
      const input = unit.repeat((8 * 1024 * 1024) / unit.length);
      const r = await callWithDeadline('dist/src/common/plain-text.js', 'plainText', [input], 20_000);
      expect(r, JSON.stringify(unit)).toMatchObject({ ok: true });
    }
  });
});

// The iterative removal it replaced: the reference for what is removed.
const HTML_COMMENT = /<!--[\s\S]*?(-->|$)/g;
function referenceStrip(text: string): string {
  let out = text;
  for (let prev = ''; prev !== out; ) {
    prev = out;
    out = out.replace(HTML_COMMENT, '');
  }
  return out;
}

describe('sanitizeUntrusted removes what the iterative removal removed', () => {
  it('on 50,000 random strings of comment fragments', () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const pieces = ['<', '!', '-', '>', 'a', ' ', '<!--', '-->', '<!', '--', '\n'];
    for (let i = 0; i < 50_000; i++) {
      let s = '';
      for (let j = 1 + Math.floor(next() * 20); j > 0; j--) s += pieces[Math.floor(next() * pieces.length)];
      expect(sanitizeUntrusted(s), JSON.stringify(s)).toBe(referenceStrip(s));
    }
    for (let d = 0; d < 30; d++) expect(sanitizeUntrusted(`x${nested(d)}y`)).toBe(referenceStrip(`x${nested(d)}y`));
  });
});
