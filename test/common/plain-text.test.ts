import { describe, expect, it } from 'vitest';
import { plainText, withoutEscapes } from '../../src/common/plain-text.js';

describe('withoutEscapes', () => {
  it('removes colours, cursor moves, titles and hyperlinks in their 7-bit and 8-bit forms, and keeps the rest', () => {
    expect(withoutEscapes('\x1b[1;31mFAIL\x1b[0m src/a.test.ts\n\tline 2\r\n')).toBe('FAIL src/a.test.ts\n\tline 2\r\n');
    expect(withoutEscapes('\x9b31mred\x9b0m')).toBe('red');
    expect(withoutEscapes('\x1b]8;;https://x.test\x07link\x1b]8;;\x1b\\ \x9d0;title\x9c.')).toBe('link .');
    expect(withoutEscapes('a\x1b[2Jb\x1bMc')).toBe('abc');
  });
});

describe('plainText', () => {
  it('also drops the parameters of an 8-bit CSI, then every other control character', () => {
    expect(plainText('\x9b31mred\x9b0m\x07\x00\ttab\r\n')).toBe('red tab\n');
  });
});
