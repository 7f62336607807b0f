import { describe, expect, it } from 'vitest';
import { failureSignature, normalizeFailure } from '../../src/goal/failure-signature.js';

// Each runner's failure, as a function of what changes between two runs of the same failure.
interface Run {
  ms: number;
  tmp: string;
  addr: string;
  clock: string;
}
const A: Run = { ms: 12, tmp: '/tmp/goal-loop-ws-a81Kz2', addr: '0x7ffd5e8c1a20', clock: '09:44:15' };
const B: Run = { ms: 347, tmp: '/tmp/goal-loop-ws-Q0pLm9', addr: '0x7ffc01b2e9f8', clock: '11:02:58' };

const vitest = (r: Run, assertion = 'expected 0 to be 90', line = 7) =>
  `
 RUN  v4.1.12 ${r.tmp}/repo

 ❯ test/cart.test.ts (2 tests | 1 failed) ${r.ms}ms
   ✓ total of an empty cart ${r.ms % 7}ms
   × applies the discount ${r.ms + 3}ms
     → ${assertion}

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  test/cart.test.ts > applies the discount
AssertionError: ${assertion}
 ❯ test/cart.test.ts:${line}:25
    ${line - 1}|   it('applies the discount', () => {
    ${line}|     expect(discount(100, 10)).toBe(90);

 Test Files  1 failed (1)
      Tests  1 failed | 1 passed (2)
   Start at  ${r.clock}
   Duration  ${(r.ms / 100).toFixed(2)}s (transform ${r.ms}ms, setup 0ms, collect ${r.ms * 2}ms, tests ${r.ms}ms, environment 0ms, prepare ${r.ms}ms)
`;

const jest = (r: Run, assertion = 'Expected: 90', line = 12) =>
  `FAIL src/cart.test.js (${(r.ms / 1000).toFixed(3)} s)
  cart
    ✓ totals an empty cart (${r.ms} ms)
    ✕ applies the discount (${r.ms + 1} ms)

  ● cart › applies the discount

    expect(received).toBe(expected) // Object.is equality

    ${assertion}
    Received: 100

      at Object.<anonymous> (${r.tmp}/repo/src/cart.test.js:${line}:31)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 1 passed, 2 total
Snapshots:   0 total
Time:        ${(r.ms / 100).toFixed(3)} s, estimated ${r.ms % 5} s
Ran all test suites.
`;

const mocha = (r: Run, assertion = 'AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n100 !== 90\n') =>
  `

  cart
    ✔ totals an empty cart
    1) applies the discount (${r.ms}ms)


  1 passing (${r.ms + 20}ms)
  1 failing

  1) cart
       applies the discount:

      ${assertion}
      at Context.<anonymous> (test/cart.spec.js:9:12)
      at process.processImmediate (node:internal/timers:476:21)



`;

/** pytest's summary line: centred in 80 columns of `=`, so its padding follows the duration's width. */
const rule = (title: string): string => {
  const left = Math.floor((78 - title.length) / 2);
  return `${'='.repeat(left)} ${title} ${'='.repeat(78 - title.length - left)}`;
};

const pytest = (r: Run, assertion = 'assert 100 == 90', line = 8) =>
  `============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0
rootdir: ${r.tmp}/repo
collected 2 items

tests/test_cart.py .F                                                    [100%]

=================================== FAILURES ===================================
____________________________ test_applies_discount _____________________________

tmp_path = PosixPath('/tmp/pytest-of-runner/pytest-${r.ms % 9}/test_applies_discount0')

    def test_applies_discount(tmp_path):
>       ${assertion}
E       ${assertion}

tests/test_cart.py:${line}: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_applies_discount - ${assertion}
${rule(`1 failed, 1 passed in ${(r.ms / 10).toFixed(2)}s`)}
`;

const goTest = (r: Run, got = 'got 100, want 90', line = 14) =>
  `=== RUN   TestTotal
--- PASS: TestTotal (0.00s)
=== RUN   TestDiscount
    cart_test.go:${line}: ${got}
--- FAIL: TestDiscount (${(r.ms / 1000).toFixed(2)}s)
panic: runtime error: invalid memory address or nil pointer dereference [recovered]
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=${r.addr}]

goroutine 7 [running]:
testing.tRunner.func1.2({0x5a3e20, 0xc000012345})
FAIL\texample.com/shop\t${(r.ms / 1000).toFixed(3)}s
FAIL
`;

// node --test (TAP), as a real run printed it on tj/commander.js: its durations are keyed, not suffixed.
const nodeTest = (r: Run, message = 'require is not defined in ES module scope, you can use import instead', line = 1) =>
  `TAP version 13
# Subtest: tests/goal-short-flag.test.js
not ok 1 - tests/goal-short-flag.test.js
  ---
  duration_ms: ${r.ms.toFixed(3)}
  location: '/srv/ws/tests/goal-short-flag.test.js:${line}:1'
  failureType: 'testCodeFailure'
  exitCode: 1
  error: 'test failed'
  code: 'ERR_TEST_FAILURE'
  stack: |-
    ReferenceError: ${message}
  ...
1..1
# tests 1
# pass 0
# fail 1
# duration_ms ${(r.ms * 1.7).toFixed(5)}
`;

describe('failure signatures', () => {
  it.each([
    ['node --test', nodeTest(A), nodeTest(B)],
    ['vitest', vitest(A), vitest(B)],
    ['jest', jest(A), jest(B)],
    ['mocha', mocha(A), mocha(B)],
    ['pytest', pytest(A), pytest(B)],
    ['go test', goTest(A), goTest(B)],
  ])('%s: two runs that failed the same way compare equal', (_runner, a, b) => {
    expect(a).not.toBe(b);
    expect(normalizeFailure(a)).toBe(normalizeFailure(b));
    expect(failureSignature(a)).toBe(failureSignature(b));
    expect(failureSignature(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it.each([
    ['vitest: another assertion', vitest(A), vitest(B, 'expected 0 to be 95')],
    ['vitest: another line', vitest(A), vitest(B, undefined, 9)],
    ['jest: another expected value', jest(A), jest(B, 'Expected: 80')],
    ['jest: another line', jest(A), jest(B, undefined, 13)],
    ['mocha: another assertion', mocha(A), mocha(B, 'AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n100 !== 80\n')],
    ['pytest: another assertion', pytest(A), pytest(B, 'assert 100 == 80')],
    ['pytest: another line', pytest(A), pytest(B, undefined, 18)],
    ['go test: another message', goTest(A), goTest(B, 'got 100, want 80')],
    ['go test: another line', goTest(A), goTest(B, undefined, 15)],
    ['node --test: another error', nodeTest(A), nodeTest(B, 'Cannot find module')],
  ])('%s: a different failure', (_case, a, b) => {
    expect(failureSignature(a)).not.toBe(failureSignature(b));
  });

  it('replaces the workspace dir, temp dirs, clocks, addresses, ids, pids and ports', () => {
    const out = [
      'Error: ENOENT: no such file or directory, open /srv/goal-loop/ws/goal-42/repo/src/config.json  ',
      'copied to /tmp/tmp.XyZ123/out.txt and /private/var/folders/x1/abc_def/T/vitest-9/setup.js',
      '2026-12-02T09:44:15.123Z [info] started at 09:44:15.123, done 2026-12-02 09:45:01',
      'Segmentation fault at 0x7ffd5e8c1a20 (flags 0xff)',
      'commit 3f9a2b7c81d4e5f60718293a4b5c6d7e8f901234, request id 0a1b2c3d4e5f6a7b, uuid 123e4567-e89b-12d3-a456-426614174000',
      'server pid 48213 (PID=48214) listening on http://127.0.0.1:43127 and localhost:5173',
      'node[4821]: worker exited',
      'Time: 0.5 s, Duration  1.23s, in 2.3s, (34 ms), took 1m2.5s',
      '',
      '',
      '',
      'expected [1234] to equal [1235] in Test Suite deadline',
      '',
    ].join('\r\n');
    expect(normalizeFailure(out, { workspaceDir: '/srv/goal-loop/ws/goal-42/repo/' }).split('\n')).toEqual([
      'Error: ENOENT: no such file or directory, open <workspace>/src/config.json',
      'copied to <tmp>/out.txt and <tmp>/setup.js',
      '<timestamp> [info] started at <time>, done <timestamp>',
      'Segmentation fault at 0x<addr> (flags 0xff)',
      'commit <hex>, request id <hex>, uuid <uuid>',
      'server pid <pid> (PID=<pid>) listening on http://127.0.0.1:<port> and localhost:<port>',
      'node[<pid>]: worker exited',
      'Time: <duration>, Duration <duration>, in <duration>, (<duration>), took <duration>',
      '',
      'expected [1234] to equal [1235] in Test Suite deadline',
    ]);
  });

  it('keeps file:line:column, counts and colours out of the way', () => {
    const plain = 'FAIL src/a.test.ts:12:5\nTests: 3 failed, 2 passed (5)\n';
    const coloured = '\x1b[31mFAIL\x1b[39m src/a.test.ts:12:5   \nTests: 3 failed, 2 passed (5)\n\n\n';
    expect(normalizeFailure(coloured)).toBe('FAIL src/a.test.ts:12:5\nTests: 3 failed, 2 passed (5)');
    expect(failureSignature(coloured)).toBe(failureSignature(plain));
    expect(failureSignature(plain)).not.toBe(failureSignature(plain.replace('12:5', '13:5')));
    expect(failureSignature(plain)).not.toBe(failureSignature(plain.replace('3 failed, 2 passed', '2 failed, 3 passed')));
  });

  it('ignores a workspace dir of "/" or "" (it would erase every path)', () => {
    expect(normalizeFailure('at /src/a.ts:1', { workspaceDir: '/' })).toBe('at /src/a.ts:1');
    expect(normalizeFailure('at /src/a.ts:1', { workspaceDir: '' })).toBe('at /src/a.ts:1');
  });
});
