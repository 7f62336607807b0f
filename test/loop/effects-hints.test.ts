import { describe, expect, it } from 'vitest';
import { guessInstallCommand, isCommandNotFound, isMissingDependency, LOCKFILE_INSTALLS, MISSING_SETUP_HINT_HEAD } from '../../src/goal/failure-summary.js';
import { goalHarness } from '../helpers/goal-harness.js';

const JEST_GOAL = (where: 'run' | 'verification') => ({
  goal_id: `hint-${where}`,
  objective: 'tests need installed dependencies',
  tasks: [
    where === 'run'
      ? { id: 'test', title: 'Run the tests', run: './node_modules/.bin/jest', verification: 'true', max_retries: 1 }
      : { id: 'test', title: 'Run the tests', verification: './node_modules/.bin/jest', max_retries: 1 },
  ],
});

describe('the missing-setup hint on a command that was not found', () => {
  it.each(['run', 'verification'] as const)('a %s that exits 127 without setup ends with the config to add, npm ci from package-lock.json', async (where) => {
    const h = await goalHarness({ files: { 'package-lock.json': '{}\n' } });
    const result = await h.run(JEST_GOAL(where));
    expect(result.status).toBe('ESCALATED');
    const error = result.escalation!.last_error;
    expect(error).toMatch(/exited with code 127/);
    expect(error).toMatch(/node_modules\/\.bin\/jest/);
    // The hint comes last, so every tail-excerpt (console, GitHub comment) keeps it.
    expect(error.slice(error.indexOf(MISSING_SETUP_HINT_HEAD))).toMatch(
      /^hint: no setup ran in this run \(the repo config has no `setup`\), so the dependencies were never installed\.\n.*\n {2}# \.github\/goal-loop\.yml\n {2}setup:\n {4}- npm ci\n {2}network: setup$/,
    );
    expect(h.forge.escalations[0]!.last_error).toBe(error);
  });

  it('guesses from the lockfile present, else from package.json (the sample repository has one, no lockfile)', async () => {
    const h = await goalHarness({ files: { 'yarn.lock': '# yarn\n' } });
    const result = await h.run(JEST_GOAL('verification'));
    expect(result.escalation!.last_error).toContain('    - yarn install --frozen-lockfile\n');
    const none = await goalHarness();
    expect((await none.run(JEST_GOAL('verification'))).escalation!.last_error).toContain('    - npm install\n');
  });

  it('no hint when setup ran a command, or when the exit code is not 126/127', async () => {
    const withSetup = await goalHarness({ files: { 'package-lock.json': '{}\n' } });
    const r1 = await withSetup.run(JEST_GOAL('verification'), { setup: ['true'] });
    expect(r1.escalation!.last_error).toMatch(/exited with code 127/);
    expect(r1.escalation!.last_error).not.toContain(MISSING_SETUP_HINT_HEAD);

    const plainFailure = await goalHarness({ files: { 'package-lock.json': '{}\n' } });
    const r2 = await plainFailure.run({ goal_id: 'plain', objective: 'x', tasks: [{ id: 't', title: 't', verification: 'echo nope; exit 1', max_retries: 1 }] });
    expect(r2.escalation!.last_error).toContain('nope');
    expect(r2.escalation!.last_error).not.toContain(MISSING_SETUP_HINT_HEAD);
  });

  it('exit 126 (not executable) gets the hint too', async () => {
    const h = await goalHarness({ files: { 'Cargo.lock': '\n', 'tool.sh': 'echo hi\n' } });
    const result = await h.run({ goal_id: 'noexec', objective: 'x', tasks: [{ id: 't', title: 't', verification: './tool.sh', max_retries: 1 }] });
    expect(result.escalation!.last_error).toMatch(/exited with code 126/);
    expect(result.escalation!.last_error).toContain('    - cargo fetch\n');
  });

  it('a program whose import is not installed (exit 1) gets the hint: npm install from a package.json without a lockfile', async () => {
    // As sindresorhus/slugify: a package.json, no lockfile, an ES module importing its dependency.
    const h = await goalHarness({
      files: { 'package.json': '{"type": "module", "dependencies": {"escape-string-regexp": "^5.0.0"}}\n', 'index.js': "import escape from 'escape-string-regexp';\nconsole.log(escape('a.b'));\n" },
    });
    const result = await h.run({ goal_id: 'nodeps', objective: 'x', tasks: [{ id: 't', title: 't', verification: 'node index.js', max_retries: 1 }] });
    const error = result.escalation!.last_error;
    expect(error).toMatch(/exited with code 1/);
    expect(error).toMatch(/ERR_MODULE_NOT_FOUND/);
    expect(error).toContain(MISSING_SETUP_HINT_HEAD);
    expect(error).toContain('    - npm install\n');
  });

  it('which failures say the dependencies are missing', () => {
    const cases: [number | null, string, boolean][] = [
      [127, 'sh: jest: not found', true],
      [1, "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'x' imported from /w/index.js", true],
      [1, "Error: Cannot find module 'lodash'\nRequire stack:", true],
      [1, "ModuleNotFoundError: No module named 'requests'", true],
      [1, 'AssertionError: expected 1 to be 2', false],
      // A test that itself checks the message, and passed, or a command killed: not a missing install.
      [0, "Error: Cannot find module 'x'", false],
      [null, 'ERR_MODULE_NOT_FOUND', false],
    ];
    for (const [exitCode, output, missing] of cases) expect(isMissingDependency({ exitCode, output }), output).toBe(missing);
  });

  it('the lockfile table', () => {
    const cases: [string[], string][] = [
      [['package-lock.json'], 'npm ci'],
      [['pnpm-lock.yaml'], 'pnpm install --frozen-lockfile'],
      [['yarn.lock'], 'yarn install --frozen-lockfile'],
      [['requirements.txt'], 'pip install -r requirements.txt'],
      [['Cargo.lock'], 'cargo fetch'],
      [['yarn.lock', 'package-lock.json'], 'npm ci'],
      [['package.json'], 'npm install'],
      [['package.json', 'yarn.lock'], 'yarn install --frozen-lockfile'],
      [['package.json', 'yarn.lock', '.yarnrc.yml'], 'yarn install --immutable'],
      [['npm-shrinkwrap.json'], 'npm ci'],
      [['bun.lock'], 'bun install --frozen-lockfile'],
      [['bun.lockb', 'package.json'], 'bun install --frozen-lockfile'],
      [['.yarnrc.yml', 'package-lock.json'], 'npm ci'],
      [[], '<your install command>'],
      [['Gemfile.lock'], '<your install command>'],
    ];
    for (const [files, install] of cases) expect(guessInstallCommand((f) => files.includes(f))).toBe(install);
    expect(LOCKFILE_INSTALLS.map(([f]) => f)).toEqual([
      'package-lock.json',
      'npm-shrinkwrap.json',
      'pnpm-lock.yaml',
      'yarn.lock',
      'bun.lock',
      'bun.lockb',
      'requirements.txt',
      'Cargo.lock',
      'package.json',
    ]);
    expect([0, 1, 2, 125, 126, 127, 128, null].map(isCommandNotFound)).toEqual([false, false, false, false, true, true, false, false]);
  });
});
