import { describe, expect, it } from 'vitest';
import { verificationScripts } from '../../src/goal/verification-scripts.js';

describe('verificationScripts', () => {
  it.each([
    ['bash scripts/check.sh', ['scripts/check.sh']],
    ['./verify.sh', ['verify.sh']],
    ['sh -x ./ci/test.sh && node test.js', ['ci/test.sh', 'test.js']],
    ['CI=1 node --test test/unit.test.js', ['test/unit.test.js']],
    ['npx tsx scripts/verify.ts', ['scripts/verify.ts']],
    ['python3 -u tools/check.py | tee out.txt', ['tools/check.py']],
  ])('%s runs %j', (command, scripts) => {
    expect(verificationScripts(command)).toEqual(scripts);
  });

  it.each(['npm test', 'node -e "process.exit(1)"', 'python -m pytest -q', 'bash -c "exit 1"', 'grep -q foo README.md', 'node /etc/passwd', 'bash ../outside.sh', 'test -f dist/index.js'])(
    '%s runs no script of the repository',
    (command) => {
      expect(verificationScripts(command)).toEqual([]);
    },
  );
});
