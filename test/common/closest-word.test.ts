import { describe, expect, it } from 'vitest';
import { closestWord, didYouMean, editDistance } from '../../src/common/closest-word.js';

const KEYS = ['setup', 'setup_env', 'setup_inputs', 'gate', 'label', 'max_retries', 'network', 'sandbox'];

describe('closestWord', () => {
  it('finds the key a typo meant: a missing, extra, wrong or swapped character, or another case', () => {
    expect(closestWord('stup', KEYS)).toBe('setup');
    expect(closestWord('setupp', KEYS)).toBe('setup');
    expect(closestWord('lable', KEYS)).toBe('label');
    expect(closestWord('max_retrys', KEYS)).toBe('max_retries');
    expect(closestWord('Network', KEYS)).toBe('network');
    expect(closestWord('setup_envs', KEYS)).toBe('setup_env');
  });

  it('suggests nothing for a word no key is close to, a short word far off, or a very long one', () => {
    expect(closestWord('colour', KEYS)).toBeUndefined();
    expect(closestWord('xyz', KEYS)).toBeUndefined();
    expect(closestWord('gat', KEYS)).toBe('gate');
    expect(closestWord('ab', ['gate'])).toBeUndefined();
    expect(closestWord(`setup${'x'.repeat(100)}`, KEYS)).toBeUndefined();
    expect(closestWord('', KEYS)).toBeUndefined();
  });

  it('didYouMean words it for an error line', () => {
    expect(didYouMean('sandbx', KEYS)).toBe(' (did you mean sandbox?)');
    expect(didYouMean('colour', KEYS)).toBe('');
  });

  it('editDistance counts a swap of neighbours as one edit', () => {
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('abc', 'acb')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });
});
