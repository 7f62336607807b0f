import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** decide/ is pure: its modules import (at run time) only the goal model, untrusted-text helpers, the checks' verdict and other pure parsers. */
const DIR = join(import.meta.dirname, '../../../src/steering/decide');
const PURE = [/^\.\/[\w-]+\.js$/, /^\.\.\/\.\.\/goal\//, /^\.\.\/\.\.\/common\/(untrusted|inert-text)\.js$/, /^\.\.\/(commands|issue-goal|labels|plan-from-issue|repo-checks)\.js$/];

describe('src/steering/decide does no I/O', () => {
  it.each(readdirSync(DIR).filter((f) => f.endsWith('.ts')))('%s', (file) => {
    const source = readFileSync(join(DIR, file), 'utf8');
    const runtime = [...source.matchAll(/^import (?!type )[^;]*? from '([^']+)';/gms)].map((m) => m[1]!);
    expect(runtime.filter((spec) => !PURE.some((re) => re.test(spec)))).toEqual([]);
  });
});
