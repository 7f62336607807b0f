import { describe, expect, it } from 'vitest';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { cannotFailReason, verificationFlags } from '../../src/goal/verification-lint.js';
import { rawSpec, rawTask } from '../helpers/spec-builders.js';

describe('verifications that cannot fail', () => {
  it.each([
    ['true', '"true" alone'],
    [':', '":" alone'],
    ['exit 0', '"exit 0" alone'],
    ['exit', '"exit" alone'],
    ['  true  ', '"true" alone'],
    ['true;', '"true" alone'],
    ['true\n', '"true" alone'],
    ['"true"', '"true" alone'],
    ['/bin/true', '"/bin/true" alone'],
    ['CI=1 true', '"true" alone'],
    ['exit 00', '"exit 0" alone'],
    ['echo done', '"echo …" alone'],
    ['echo', '"echo …" alone'],
    ['echo "tests: $(npm test)"', '"echo …" alone'],
    ["printf '%s\\n' ok", '"printf …" alone'],
    ['echo ok > result.txt', '"echo …" alone'],
    ['npm test || true', '"|| true" at the end'],
    ['npm test||true', '"|| true" at the end'],
    ['npm test   ||   true', '"|| true" at the end'],
    ['npm test || true;', '"|| true" at the end'],
    ['npm test || true ;\n', '"|| true" at the end'],
    ['npm test 2>&1 || true', '"|| true" at the end'],
    ['npx vitest run test/cart.test.ts || :', '"|| :" at the end'],
    ['npm test || exit 0', '"|| exit 0" at the end'],
    ['npm test || echo "tests failed"', '"|| echo …" at the end'],
    ['npm test; true', '"; true" at the end'],
    ['npm test ;true', '"; true" at the end'],
    ['npm test; exit 0', '"; exit 0" at the end'],
    ['npm test; :', '"; :" at the end'],
    ['npm test\ntrue\n', '"; true" at the end'],
    ['npm test; echo done', '"; echo …" at the end'],
    ['npm test && npm run lint || true', '"|| true" at the end'],
    ['npm test | true', '"| true" at the end'],
    ['(npm test || true)', '"|| true" at the end'],
    ['{ npm test || true; }', '"|| true" at the end'],
    ['(npm test || true) && (npm run lint || :)', '"|| :" at the end'],
    ['npm test &', '"&" runs it in the background'],
    ['exit 0; npm test', '"exit 0" before the end'],
    ['npm test # runs the tests\ntrue', '"; true" at the end'],
    ['set -e; npm test || true', '"|| true" at the end'],
  ])('%j cannot fail: %s', (command, why) => {
    expect(cannotFailReason(command)).toBe(why);
  });

  it.each([
    'npm test',
    'npx vitest run test/cart.test.ts',
    'test "$X" = true',
    'npm test -- --bail=true',
    'grep -q true file',
    '[ "$(cat flag)" = true ]',
    'npm test && true',
    'npm test && echo ok',
    'npm test && exit 0',
    'echo start && npm test',
    'echo start; npm test',
    'true && npm test',
    'npm test || exit',
    'npm test; exit',
    'npm test || exit 1',
    'npm test || { echo failed; exit 1; }',
    'npm test # || true',
    'npm test "|| true"',
    "npm test '; true'",
    'npm test \\; true',
    'node -e "process.exit(0)"',
    'npm test 2>&1',
    'npm test &>test.log',
    'npm test | tail -5',
    '(exit 0); npm test',
    '$TEST_COMMAND',
    // `cd` fails when the directory is missing (a task may create it): only what is certain is flagged.
    'cd pkg && (npm test || true)',
    'set -e; npm test; echo done',
    'set -eu\nnpm test\necho ok',
    'set -o errexit; npm test; true',
    'set -o pipefail; npm test | true',
    'if npm test; then true; fi',
    'for f in a b; do npm test $f; done; :',
    'case "$X" in a) true;; esac',
    '! true',
    'npm test || true"',
    'npm test && && true',
  ])('%j can fail (or is not judged)', (command) => {
    expect(cannotFailReason(command)).toBeUndefined();
  });

  it('does not judge a command too long or too deeply nested to read quickly', () => {
    expect(cannotFailReason(`${'('.repeat(2000)}true${')'.repeat(2000)}`)).toBeUndefined();
    expect(cannotFailReason(`echo ${'"$('.repeat(1500)}x${')"'.repeat(1500)}`)).toBeUndefined();
    expect(cannotFailReason(`npm test ${'x '.repeat(6000)}|| true`)).toBeUndefined();
    expect(cannotFailReason(`${'('.repeat(10)}npm test || true${')'.repeat(10)}`)).toBe('"|| true" at the end');
    expect(cannotFailReason(`echo ${'"$('.repeat(10)}npm test${')"'.repeat(10)}`)).toBe('"echo …" alone');
  });

  it('names the task by path and id, one line per flagged task', () => {
    const spec = validateGoalSpec(
      rawSpec([
        rawTask('task-01'),
        rawTask('task-02', [], { verification: 'npm test || true' }),
        rawTask('task-03', [], { verification: 'grep -q true config.yml' }),
        rawTask('task-04', [], { verification: 'exit 0' }),
      ]),
    );
    expect(verificationFlags(spec)).toEqual([
      'tasks[1].verification: cannot fail ("|| true" at the end): a verification must fail before the task and pass after it (task "task-02")',
      'tasks[3].verification: cannot fail ("exit 0" alone): a verification must fail before the task and pass after it (task "task-04")',
    ]);
    expect(verificationFlags(validateGoalSpec(rawSpec()))).toEqual([]);
  });
});
