import { describe, expect, it } from 'vitest';
import { verificationPackageScripts, verificationScripts } from '../../src/goal/verification-scripts.js';

describe('verificationScripts', () => {
  it.each([
    ['bash scripts/check.sh', ['scripts/check.sh']],
    ['./verify.sh', ['verify.sh']],
    ['sh -x ./ci/test.sh && node test.js', ['ci/test.sh', 'test.js']],
    ['CI=1 node --test test/unit.test.js', ['test/unit.test.js']],
    ['npx tsx scripts/verify.ts', ['scripts/verify.ts']],
    ['python3 -u tools/check.py | tee out.txt', ['tools/check.py']],
    // Wrappers and subshells run the script all the same.
    ['timeout 300 bash scripts/check.sh', ['scripts/check.sh']],
    ['(bash scripts/check.sh)', ['scripts/check.sh']],
    ['{ time nice ./verify.sh; }', ['verify.sh']],
    ['env CI=1 node test.js', ['test.js']],
    ['make test', ['GNUmakefile', 'makefile', 'Makefile']],
    ['npm ci && timeout 60 make -j2 check', ['GNUmakefile', 'makefile', 'Makefile']],
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

describe('verificationPackageScripts', () => {
  const INSTALL = ['install', 'prepublish', 'prepare', 'dependencies'];
  it.each([
    ['npm test', ['test']],
    ['npm t', ['test']],
    ['npm tst', ['test']],
    ['npm tes', ['test']],
    ['npm test --silent', ['test']],
    ['npm run -s lint', ['lint']],
    ['npm run test:unit -- --grep x', ['test:unit']],
    ['npm run-script check', ['check']],
    ['npm rum check', ['check']],
    ["npm run 'lint'", ['lint']],
    ['npm --loglevel silent test', ['test']],
    ['npm --prefix . test', ['test']],
    ['npm --prefix=./ test', ['test']],
    ['npm --prefix "$PWD" test', ['test']],
    ['npm start', ['start']],
    ['npm stop', ['stop']],
    ['npm restart', ['restart', 'stop', 'start']],
    ['npm ci && npm test', [...INSTALL, 'test']],
    ['npm cit', [...INSTALL, 'test']],
    ['npm run test --workspaces --include-workspace-root', ['test']],
    ['npm test -- --prefix sub', ['test']],
    ['CI=1 FOO=bar npm test', ['test']],
    ['env CI=1 npm test', ['test']],
    ['timeout 300 npm test', ['test']],
    ['(npm test)', ['test']],
    ['npm run build && npm test | tee log', ['build', 'test']],
    ['npm run lint\nnpm test', ['lint', 'test']],
    ['npm run lint; cd sub && npm test', ['lint']],
    ['cd . && npm test', ['test']],
    ['(cd web && npm ci) && npm test', ['test']],
    ['( cd web; npm run build ) ; npm run lint', ['lint']],
    ['cd sub && npm test; popd; npm run lint', ['lint']],
    ['yarn test', ['test']],
    ['yarn jest', ['jest']],
    ['yarn run lint', ['lint']],
    ['yarn -s test', ['test']],
    ['yarn --cwd . lint', ['lint']],
    ['yarn', INSTALL],
    ['yarn install --frozen-lockfile && yarn test', [...INSTALL, 'test']],
    ['pnpm test', ['test']],
    ['pnpm t', ['test']],
    ['pnpm run check', ['check']],
    ['pnpm --silent run check', ['check']],
    ['pnpm lint', ['lint']],
    ['pnpm -w test', ['test']],
    ['pnpm -r --include-workspace-root test', ['test']],
    ['pnpm install', ['pnpm:devPreinstall', 'install', 'prepare']],
    ['bun run test', ['test']],
    ['bun --silent run lint', ['lint']],
    ['bun lint', ['lint']],
    ['bun install', ['install', 'prepare']],
    ['deno task check', ['check']],
    ['node --run test', ['test']],
    ['node --run=lint', ['lint']],
    ['corepack pnpm test', ['test']],
  ])('%s runs the scripts %j', (command, scripts) => {
    expect(verificationPackageScripts(command)).toEqual(scripts);
  });

  it.each([
    'bun test',
    'bun test test/sum.test.ts',
    'bun ./scripts/check.ts',
    'bun run ./scripts/check.ts',
    'npm exec jest',
    'npx jest',
    'npm run',
    'npm st',
    'npm --prefix sub test',
    'npm -C packages/a test',
    'npm test --prefix=sub',
    'npm test -w packages/a',
    'npm run test --workspace=a',
    'npm run test --workspaces',
    'yarn --cwd sub test',
    'yarn workspace a test',
    'yarn workspaces foreach run test',
    'yarn exec jest',
    'yarn dlx jest',
    'pnpm --filter a test',
    'pnpm -F a run lint',
    'pnpm -C sub test',
    'pnpm --dir=sub test',
    'pnpm -r test',
    'pnpm exec jest',
    'pnpm dlx jest',
    'bun --cwd sub run test',
    'bun run --filter a test',
    'bun -e "1"',
    'deno test',
    'deno task --cwd sub check',
    'node --test',
    'node test.js --run test',
    'npm run $SCRIPT',
    'npm run "$SCRIPT"',
    'cd packages/a && npm test',
    '(cd packages/a && (npm test))',
    'jest',
    'make test',
    'python -m pytest',
  ])('%s runs no script of the root package.json', (command) => {
    expect(verificationPackageScripts(command)).toEqual([]);
  });
});
