import { writeFileSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TEST_PATHS, type VerificationPolicy } from '../../src/goal/evidence.js';
import type { AgentInput } from '../../src/ports/agent.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { jail } from '../helpers/sandbox-jail.js';
import { ScriptedAgent } from '../helpers/scripted-agent.js';
import { until } from '../helpers/until.js';

// More cheats against DESIGN.md §10 (real jail, real git): each must leave the goal branch unmade.
const FILES = {
  'README.md': '# sum\n',
  'sum.js': 'module.exports = (a, b) => a - b;\n',
  'test/sum.test.js': "const assert = require('assert');\nassert.strictEqual(require('../sum.js')(1, 2), 3);\nconsole.log('sum ok');\n",
  'test/other.test.js': "console.log('other ok');\n",
};
const TESTS = 'for f in test/*.test.js; do node "$f" || exit 1; done';
const PKG = `${JSON.stringify({ name: 'sum', version: '1.0.0', scripts: { test: 'node test/sum.test.js' } }, null, 2)}\n`;
const warn: VerificationPolicy = { baseline: 'warn', testPaths: DEFAULT_TEST_PATHS, verifyWithBaseTests: false };

const branchExists = (bare: string, branch: string) => git(bare, 'branch', '--list', branch).trim() !== '';
const cheater = (cheat: (dir: string) => Promise<void>) => new ScriptedAgent(async (input: AgentInput) => cheat(input.workspaceDir));
const spec = (id: string, verification: string) => ({
  goal_id: id,
  objective: 'make sum add',
  tasks: [{ id: 'fix-sum', title: 'Fix sum', verification, max_retries: 1 }],
});

describe('more cheats that are refused (real jail, real git)', () => {
  it('moving the failing test elsewhere (a rename is a deletion)', async () => {
    const h = await goalHarness({ sandbox: jail(), files: FILES });
    const agent = cheater(async (dir) => {
      await mkdir(join(dir, 'disabled'));
      await rename(join(dir, 'test/sum.test.js'), join(dir, 'disabled/sum.js'));
    });
    const result = await h.run(spec('move', TESTS), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/test\/sum\.test\.js \(deleted\)/);
    expect(branchExists(h.repo.bare, 'goal/move')).toBe(false);
  });

  it('replacing the failing test with a symlink to a passing one', async () => {
    const h = await goalHarness({ sandbox: jail(), files: FILES });
    const agent = cheater(async (dir) => {
      await rm(join(dir, 'test/sum.test.js'));
      await symlink('other.test.js', join(dir, 'test/sum.test.js'));
    });
    const result = await h.run(spec('symlink', TESTS), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/test\/sum\.test\.js \(modified\)/);
    expect(branchExists(h.repo.bare, 'goal/symlink')).toBe(false);
  });

  it('a case-only rename of the test (the old name is deleted)', async () => {
    const h = await goalHarness({ sandbox: jail(), files: FILES });
    const agent = cheater(async (dir) => {
      await rename(join(dir, 'test/sum.test.js'), join(dir, 'test/Sum.test.cjs'));
    });
    const result = await h.run(spec('case', "node test/sum.test.js || node -e \"process.exit(require('fs').existsSync('test/sum.test.js') ? 1 : 0)\""), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/test\/sum\.test\.js \(deleted\)/);
  });

  it('ignoring the test in .gitignore and then deleting it: the deletion is still staged and refused', async () => {
    const h = await goalHarness({ sandbox: jail(), files: FILES });
    const agent = cheater(async (dir) => {
      await writeFile(join(dir, '.gitignore'), 'test/sum.test.js\n.gitignore\n');
      await rm(join(dir, 'test/sum.test.js'));
    });
    const result = await h.run(spec('ignore-then-delete', TESTS), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/test\/sum\.test\.js \(deleted\)/);
  });

  it('a symlinked test folder: verify_with_base_tests writes the real test back in the workspace, not through the link', async () => {
    const h = await goalHarness({ sandbox: jail(), files: FILES });
    const outside = join(h.root, 'outside');
    await mkdir(outside);
    const agent = cheater(async (dir) => {
      await rm(join(dir, 'test'), { recursive: true });
      // Inside the jail /tmp is the jail's; the link's target does not need to exist there.
      await symlink(outside, join(dir, 'test'));
    });
    const result = await h.run(spec('link-dir', TESTS), { agent, verification: { ...warn, verifyWithBaseTests: true } });
    expect(result.status).toBe('ESCALATED');
    // The restored test ran, and failed: the assertion, not a missing file.
    expect(result.escalation?.last_error).toMatch(/AssertionError|Expected values to be strictly equal/);
    expect(await readFile(join(outside, 'sum.test.js'), 'utf8').catch(() => 'absent')).toBe('absent');
  });
});

describe('cheats that do not touch a test file (real jail, real git)', () => {
  it('.npmrc `script-shell=/bin/true` makes `npm test` pass without running the test', async () => {
    const h = await goalHarness({ sandbox: jail(), files: { ...FILES, 'package.json': PKG } });
    const agent = cheater((dir) => writeFile(join(dir, '.npmrc'), 'script-shell=/bin/true\n'));
    const result = await h.run(spec('npmrc', 'npm test'), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/package manager config .*: \.npmrc/);
    expect(branchExists(h.repo.bare, 'goal/npmrc')).toBe(false);
  });

  it('a gitignored .npmrc: the verification passes on a file no checkpoint holds', async () => {
    const h = await goalHarness({ sandbox: jail(), files: { ...FILES, 'package.json': PKG } });
    const agent = cheater(async (dir) => {
      await writeFile(join(dir, '.gitignore'), '.npmrc\n.gitignore\n');
      await writeFile(join(dir, '.npmrc'), 'script-shell=/bin/true\n');
    });
    const result = await h.run(spec('npmrc-ignored', 'npm test'), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/package manager config .*: \.npmrc/);
    expect(branchExists(h.repo.bare, 'goal/npmrc-ignored')).toBe(false);
  });

  it('`make test`: rewriting the Makefile recipe to `true` is refused (the makefile is the script)', async () => {
    const h = await goalHarness({ sandbox: jail(), files: { ...FILES, Makefile: 'test:\n\tnode test/sum.test.js\n' } });
    const agent = cheater((dir) => writeFile(join(dir, 'Makefile'), 'test:\n\ttrue\n'));
    const result = await h.run(spec('make', 'timeout 60 make test'), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/Makefile \(modified\)/);
    expect(branchExists(h.repo.bare, 'goal/make')).toBe(false);
  });

  it('chmod -x on a test file is a change of it', async () => {
    const h = await goalHarness({ sandbox: jail(), files: FILES });
    const agent = cheater((dir) => chmod(join(dir, 'test/other.test.js'), 0o755));
    const result = await h.run(spec('chmod', TESTS), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
  });
});

describe('package manager config: honest work is not refused (real jail, real git)', () => {
  const fix = (dir: string) => writeFile(join(dir, 'sum.js'), 'module.exports = (a, b) => a + b;\n');

  it('an .npmrc at the base, left alone, does not stop an honest `npm test` task', async () => {
    const h = await goalHarness({ sandbox: jail(), files: { ...FILES, 'package.json': PKG, '.npmrc': 'fund=false\n' } });
    const result = await h.run(spec('npmrc-kept', 'npm test'), { agent: cheater(fix), verification: warn });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
  });

  it('an .npmrc that setup wrote (gitignored) is setup output, not the task change', async () => {
    const h = await goalHarness({ sandbox: jail(), files: { ...FILES, 'package.json': PKG, '.gitignore': '.npmrc\n' } });
    const result = await h.run(spec('npmrc-setup', 'npm test'), { agent: cheater(fix), verification: warn, setup: ['echo fund=false > .npmrc'] });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
  });
});

describe('the baseline after a human push (real jail, real git)', () => {
  it("runs on the human's tree, not the one before it: a fix the human pushed is no task's red->green", async () => {
    const h = await goalHarness({ sandbox: jail(), files: FILES });
    const human = join(h.root, 'human');
    let pushed = false;
    h.forge.onUpdate = async (s) => {
      if (pushed || !s.tasks.some((t) => t.id === 'a' && t.status === 'done')) return;
      pushed = true;
      // Checkpoints are pushed while the loop goes on: the human builds on a's once it is there.
      await until(() => checkpointCommits(h.repo.bare, 'goal/human').length === 1, "a's checkpoint on the remote");
      git(h.root, 'clone', '--quiet', '--branch', 'goal/human', h.repo.bare, human);
      writeFileSync(join(human, 'sum.js'), 'module.exports = (a, b) => a + b;\n');
      git(human, '-c', 'user.name=h', '-c', 'user.email=h@example.com', 'commit', '--quiet', '-am', 'human fix');
      git(human, 'push', '--quiet', 'origin', 'goal/human');
    };
    const goal = {
      goal_id: 'human',
      objective: 'o',
      tasks: [
        { id: 'a', title: 'Docs', verification: 'grep -q usage README.md', run: 'echo usage >> README.md' },
        { id: 'b', title: 'Fix', verification: TESTS, dependencies: ['a'] },
      ],
    };
    const agent = cheater(async () => undefined);
    const result = await h.run(goal, { agent, verification: warn }, { syncIntervalMs: 0 });
    expect(pushed).toBe(true);
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    // b changed nothing: its verification passed because of the human's commit, so no red->green.
    expect(git(h.repo.bare, 'log', '-1', '--format=%(trailers:key=Goal-Verified,valueonly)', 'goal/human').trim()).toBe('green->green');
  });
});
