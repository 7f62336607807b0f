import { describe, expect, it } from 'vitest';
import { newAnnotations, parseAnnotations, repoPath } from '../../../src/steering/report/annotations.js';

const ROOT = '/var/lib/goal-loop/workspaces/octo-org-widgets/7';

/** [format, output, expected (path, line, column, message fragment)] */
const TABLE: [string, string, [string, number, number | undefined, string][]][] = [
  ['tsc', "src/a.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.\n", [['src/a.ts', 12, 5, "error TS2322: Type 'string'"]]],
  ['tsc --pretty', "src/b.ts:3:14 - error TS2304: Cannot find name 'foo'.\n\n3 const x = foo;\n               ~~~\n\nFound 1 error.", [['src/b.ts', 3, 14, "error TS2304: Cannot find name 'foo'."]]],
  [
    'eslint stylish',
    `\n${ROOT}/src/index.js\n  1:7   error    'unused' is assigned a value but never used  no-unused-vars\n  4:1   warning  Unexpected console statement  no-console\n\nsrc/other.js\n  9:3  error  Missing semicolon  semi\n\n✖ 3 problems (2 errors, 1 warning)\n`,
    [
      ['src/index.js', 1, 7, "'unused' is assigned a value but never used"],
      ['src/other.js', 9, 3, 'Missing semicolon'],
    ],
  ],
  [
    'eslint unix',
    'src/c.js:2:10: Missing semicolon. [Error/semi]\nsrc/c.js:5:1: Unexpected console statement. [Warning/no-console]\n\n1 problem',
    [['src/c.js', 2, 10, 'Missing semicolon. [Error/semi]']],
  ],
  ['eslint compact', 'src/d.js: line 8, col 2, Error - Unexpected var. (no-var)\n\n1 problem', [['src/d.js', 8, 2, 'Error - Unexpected var. (no-var)']]],
  [
    'vitest',
    ` FAIL  src/sum.test.ts > sum > adds\nAssertionError: expected 4 to be 3 // Object.is equality\n\n- Expected\n+ Received\n\n ❯ src/sum.test.ts:5:22\n      3| describe('sum', () => {\n\n Test Files  1 failed (1)\n`,
    [['src/sum.test.ts', 5, 22, 'src/sum.test.ts > sum > adds — AssertionError: expected 4 to be 3']],
  ],
  [
    'jest',
    'FAIL src/sum.test.js\n  ● sum › adds\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: 3\n    Received: 4\n\n      at Object.<anonymous> (node_modules/jest-circus/build/x.js:1:1)\n      at Object.<anonymous> (src/sum.test.js:4:17)\n      at Object.<anonymous> (src/other.js:9:9)\n',
    [['src/sum.test.js', 4, 17, 'sum › adds — Expected: 3']],
  ],
  [
    'node:test TAP',
    `TAP version 13\n# Subtest: adds\nnot ok 1 - adds\n  ---\n  duration_ms: 0.8\n  location: '${ROOT}/test/sum.test.js:4:1'\n  failureType: 'testCodeFailure'\n  error: |-\n    Expected values to be strictly equal:\n  code: 'ERR_ASSERTION'\n  ...\n1..1\n`,
    [['test/sum.test.js', 4, 1, 'not ok: adds: Expected values to be strictly equal:']],
  ],
  [
    'node:test spec',
    `✖ adds (1.2ms)\n  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n      at TestContext.<anonymous> (file://${ROOT}/test/sum.test.js:5:10)\n      at node:internal/test_runner/test:1:1\n`,
    [['test/sum.test.js', 5, 10, 'adds — AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:']],
  ],
];

describe('annotations from verification output', () => {
  it.each(TABLE)('%s', (_format, output, expected) => {
    const found = parseAnnotations(output, { workspaceRoot: ROOT });
    expect(found.map((a) => [a.path, a.start_line, a.start_column])).toEqual(expected.map(([p, l, c]) => [p, l, c]));
    found.forEach((a, i) => {
      expect(a.message).toContain(expected[i]![3]);
      expect(a).toMatchObject({ annotation_level: 'failure', end_line: a.start_line });
    });
  });

  it('terminal colours are stripped before parsing', () => {
    expect(parseAnnotations('\x1b[31msrc/a.ts(1,2): error TS1005: \x1b[1m; expected\x1b[0m')).toMatchObject([{ path: 'src/a.ts', start_line: 1, message: 'error TS1005: ; expected' }]);
  });

  it('dedupes by path and line', () => {
    const out = 'src/a.ts(1,2): error TS1: one\nsrc/a.ts(1,9): error TS2: two\nsrc/a.ts(2,1): error TS3: three';
    expect(parseAnnotations(out).map((a) => `${a.path}:${a.start_line}`)).toEqual(['src/a.ts:1', 'src/a.ts:2']);
  });

  it('an attack: paths with .., outside the repository, absolute elsewhere, URLs or node_modules give no annotation', () => {
    const out = [
      '../../etc/passwd(1,1): error TS1: x',
      'src/../../secret.ts(1,1): error TS1: x',
      '/etc/passwd(3,1): error TS1: x',
      `${ROOT}/../other/a.ts(3,1): error TS1: x`,
      `${ROOT}-evil/a.ts(3,1): error TS1: x`,
      'https://evil.example/a.ts:1:1: bad [Error/x]',
      'node_modules/lib/index.js(1,1): error TS1: x',
      'C:\\\\win\\\\a.ts(1,1): error TS1: x',
      'src/ok.ts(0,1): error TS1: line zero',
    ].join('\n');
    expect(parseAnnotations(out, { workspaceRoot: ROOT })).toEqual([]);
    // Without a workspace root, no absolute path is taken.
    expect(parseAnnotations(`${ROOT}/src/a.ts(1,1): error TS1: x`)).toEqual([]);
    expect(parseAnnotations(`${ROOT}/src/a.ts(1,1): error TS1: x`, { workspaceRoot: ROOT })).toMatchObject([{ path: 'src/a.ts' }]);
    expect(repoPath('./src/./a.ts')).toBe('src/a.ts');
    expect(repoPath('src/a\u0000.ts')).toBeUndefined();
  });

  it('only annotations the check run lacks are sent, at most 50', () => {
    const found = Array.from({ length: 80 }, (_, i) => ({ path: 'a.ts', start_line: i + 1, end_line: i + 1, annotation_level: 'failure' as const, message: 'm' }));
    expect(newAnnotations(found, [])).toHaveLength(50);
    const next = newAnnotations(found, found.slice(0, 50));
    expect(next.map((a) => a.start_line)).toEqual(Array.from({ length: 30 }, (_, i) => i + 51));
  });
});
