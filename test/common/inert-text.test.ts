import { describe, expect, it } from 'vitest';
import { inertLine, unlinked, unmentioned } from '../../src/common/inert-text.js';
import { unlinked as fromStatusComment } from '../../src/steering/report/status-comment.js';
import { closingReferences, liveReferences, mentions } from '../helpers/github-references.js';

const visible = (s: string) => s.replace(/[\u200b\u2060]/g, '');

describe('inert text: references, mentions, cuts', () => {
  it.each([['fixes #1, closes org/other#2 @someone'], ['Resolves: https://github.com/o/r/issues/3'], ['closed github.com/o/r/pull/4 and GH-5, see www.evil.io'], ['@org/team and owner/repo@abc1234']])(
    '%s: nothing a GitHub parser acts on, the same to a reader',
    (text) => {
      expect(closingReferences(text).length + mentions(text).length).toBeGreaterThan(0);
      const out = inertLine(text, 200);
      expect(liveReferences(out)).toEqual([]);
      expect(visible(out)).toBe(text);
    },
  );

  it('strips what an attacker could pre-insert, and escape sequences, before adding its own joiners', () => {
    expect(visible(inertLine('fix\u2060es #\u200b1 \u001b[31mred\u001b[0m\u202e', 200))).toBe('fixes #1 red');
    expect(closingReferences(inertLine('fix\u2060es #\u200b1', 200))).toEqual([]);
  });

  it('is one line, cut on a code point, and bounded', () => {
    const out = inertLine(`a\nb\r\nc\u2028d ${'😀'.repeat(300)}`, 50);
    expect(out.startsWith('a b c d ')).toBe(true);
    expect(out.length).toBeLessThanOrEqual(50);
    expect(out.endsWith('…')).toBe(true);
    expect(out).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('the old import path still gives the same helper', () => {
    expect(fromStatusComment).toBe(unlinked);
    expect(unmentioned('@a')).toBe('@\u200ba');
  });
});
