import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderAttemptEntries } from '../../src/cli/render-attempts.js';
import { DEFAULT_TEST_PATHS, type VerificationPolicy } from '../../src/goal/evidence.js';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { verificationFlags } from '../../src/goal/verification-lint.js';
import type { AgentInput } from '../../src/ports/agent.js';
import { git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { jail } from '../helpers/sandbox-jail.js';
import { ScriptedAgent } from '../helpers/scripted-agent.js';

// DESIGN.md §10 under attack: real git, the real bwrap jail, and a scripted agent that cheats.
// Nothing that cheated may reach the goal branch; an honest task shows red -> green.
const FILES = {
  'README.md': '# sum\n',
  'sum.js': 'module.exports = (a, b) => a - b;\n',
  'test/sum.test.js': "const assert = require('assert');\nassert.strictEqual(require('../sum.js')(1, 2), 3);\nconsole.log('sum ok');\n",
  'test/other.test.js': "console.log('other ok');\n",
  'scripts/check.sh': 'set -e\nfor f in test/*.test.js; do node "$f"; done\n',
};
const TESTS = 'for f in test/*.test.js; do node "$f" || exit 1; done';
const warn: VerificationPolicy = { baseline: 'warn', testPaths: DEFAULT_TEST_PATHS, verifyWithBaseTests: false };

async function harness() {
  return goalHarness({ sandbox: jail(), files: FILES });
}

const goalCommits = (bare: string, branch: string) => git(bare, 'log', '--format=%s%n%(trailers:key=Goal-Verified,valueonly)', `main..${branch}`).trim();
const branchExists = (bare: string, branch: string) => git(bare, 'branch', '--list', branch).trim() !== '';

/** The agent's cheat, every attempt; it records what the loop told it. */
function cheater(cheat: (dir: string) => Promise<void>): ScriptedAgent {
  return new ScriptedAgent(async (input: AgentInput) => {
    await cheat(input.workspaceDir);
  });
}

const spec = (id: string, verification: string, extra: Record<string, unknown> = {}) => ({
  goal_id: id,
  objective: 'make sum add',
  tasks: [{ id: 'fix-sum', title: 'Fix sum', verification, max_retries: 2, ...extra }],
});

describe('a task cannot grade its own homework (real jail, real git)', () => {
  it('deleting the failing test is refused, the next attempt is told why, and nothing is checkpointed', async () => {
    const h = await harness();
    const agent = cheater((dir) => rm(join(dir, 'test/sum.test.js')));
    const result = await h.run(spec('delete-test', TESTS), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.checkpoints).toEqual([]);
    expect(branchExists(h.repo.bare, 'goal/delete-test')).toBe(false);
    expect(agent.calls).toHaveLength(2);
    expect(agent.calls[1]!.previousFailure).toMatch(/test files that existed before the goal: test\/sum\.test\.js \(deleted\)/);
    expect(agent.calls[0]!.testPaths).toEqual(expect.arrayContaining(['test/**']));
  });

  it('editing the assertion is refused', async () => {
    const h = await harness();
    const agent = cheater(async (dir) => {
      const path = join(dir, 'test/sum.test.js');
      await writeFile(path, (await readFile(path, 'utf8')).replace(', 3)', ', -1)'));
    });
    const result = await h.run(spec('edit-assert', TESTS), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/test\/sum\.test\.js \(modified\)/);
    expect(branchExists(h.repo.bare, 'goal/edit-assert')).toBe(false);
  });

  it('adding `|| true` to the script the verification runs is refused (a script run by path is protected)', async () => {
    const h = await harness();
    const agent = cheater((dir) => writeFile(join(dir, 'scripts/check.sh'), 'for f in test/*.test.js; do node "$f" || true; done\n'));
    const result = await h.run(spec('or-true', 'bash scripts/check.sh'), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/scripts\/check\.sh \(modified\)/);
    expect(branchExists(h.repo.bare, 'goal/or-true')).toBe(false);
  });

  it('the same cheat is refused through verification_paths when the script is not named in the command', async () => {
    const h = await harness();
    const agent = cheater((dir) => writeFile(join(dir, 'scripts/check.sh'), 'true\n'));
    const result = await h.run(spec('paths', 'sh -c "bash scripts/check.sh"', { verification_paths: ['scripts/**'] }), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toMatch(/scripts\/check\.sh \(modified\)/);
  });

  it('rewriting the package.json script that `npm test` runs is refused on every attempt, the next one told why', async () => {
    const pkg = { name: 'sum', version: '1.0.0', scripts: { test: 'node test/sum.test.js' }, dependencies: {} };
    const h = await goalHarness({ sandbox: jail(), files: { ...FILES, 'package.json': `${JSON.stringify(pkg, null, 2)}\n` } });
    const agent = new ScriptedAgent(async (input: AgentInput) => {
      const path = join(input.workspaceDir, 'package.json');
      const json = JSON.parse(await readFile(path, 'utf8'));
      // The dependency is fair game; the script is what grades the task. Told, it runs another test instead.
      const test = input.attempt === 1 ? 'exit 0' : 'node test/other.test.js';
      await writeFile(path, JSON.stringify({ ...json, scripts: { ...json.scripts, test }, dependencies: { 'left-pad': '1.3.0' } }));
    });
    const result = await h.run(spec('npm-test', 'npm test'), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(result.checkpoints).toEqual([]);
    expect(branchExists(h.repo.bare, 'goal/npm-test')).toBe(false);
    expect(agent.calls).toHaveLength(2);
    expect(agent.calls[1]!.previousFailure).toMatch(/package\.json scripts that the verification runs: "test" \(changed\)/);
    expect(result.escalation?.last_error).toMatch(/may not change how its verification runs/);
    expect(result.escalation?.last_error).not.toMatch(/exit 0/);
  });

  it('verify_with_base_tests: a weakened test is put back before the verification, so the cheat fails it', async () => {
    const h = await harness();
    const agent = cheater(async (dir) => {
      await writeFile(join(dir, 'test/sum.test.js'), "console.log('fine');\n");
    });
    const result = await h.run(spec('base-tests', TESTS), { agent, verification: { ...warn, verifyWithBaseTests: true } });
    expect(result.status).toBe('ESCALATED');
    // The verification ran the real test: the failure is the assertion, not a refusal.
    expect(result.escalation?.last_error).toMatch(/AssertionError|Expected values to be strictly equal/);
    expect(branchExists(h.repo.bare, 'goal/base-tests')).toBe(false);
  });

  it('may_edit_tests lets a task change an existing test (and the run says so in its trailer)', async () => {
    const h = await harness();
    const agent = new ScriptedAgent(async (input) => {
      await writeFile(join(input.workspaceDir, 'sum.js'), 'module.exports = (a, b) => a + b;\n');
      await writeFile(join(input.workspaceDir, 'test/sum.test.js'), "const assert = require('assert');\nassert.strictEqual(require('../sum.js')(2, 2), 4);\n");
    });
    const result = await h.run(spec('may-edit', TESTS, { may_edit_tests: true }), { agent, verification: warn });
    expect(result.status).toBe('LOOP_COMPLETE');
    expect(agent.calls[0]!.testPaths).toEqual([]);
  });
});

describe('red before green (real jail, real git)', () => {
  it('an honest task shows red -> green in its commit trailer, its attempt record and `goal-loop logs`', async () => {
    const h = await harness();
    const agent = new ScriptedAgent(async (input) => {
      await writeFile(join(input.workspaceDir, 'sum.js'), 'module.exports = (a, b) => a + b;\n');
      // A new test is welcome.
      await writeFile(join(input.workspaceDir, 'test/sum-more.test.js'), "require('assert').strictEqual(require('../sum.js')(2, 2), 4);\n");
    });
    const result = await h.run(spec('honest', TESTS), { agent, verification: warn });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(goalCommits(h.repo.bare, 'goal/honest')).toBe('fix-sum: Fix sum\nred->green');
    const entries = await h.ledger.listAttemptEntries({ repo: h.repo.bare, goalId: 'honest' });
    expect(entries.map((e) => e.entry.kind)).toEqual(['baseline', 'verify', 'checkpoint', 'end']);
    expect(entries[0]!.entry).toMatchObject({ kind: 'baseline', passed: false, expect: 'red' });
    const logs = renderAttemptEntries(entries);
    expect(logs).toMatch(/baseline \(before the task's change\) .* failed, exit 1/);
    expect(logs).toMatch(/as expected \(expect: red\): the task must make it pass/);
    expect(logs).toMatch(/checkpoint [0-9a-f]{12} {2}2 files \+2 -1 · red → green/);
  });

  it('a verification that passes at the base: require_red escalates before any attempt, with how to fix the spec', async () => {
    const h = await harness();
    const agent = cheater(async () => undefined);
    const result = await h.run(spec('passes-at-base', 'node -e "require(\'./sum.js\')"'), { agent, verification: { ...warn, baseline: 'require_red' } });
    expect(result.status).toBe('ESCALATED');
    expect(agent.calls).toHaveLength(0);
    expect(result.escalation).toMatchObject({ task_id: 'fix-sum', attempts: 0, cause: 'passes_before' });
    expect(result.escalation!.last_error).toMatch(/already passes before the task made any change/);
    expect(result.escalation!.last_error).toMatch(/expect: green/);
    expect(result.stop_reason).toMatch(/did not run: its verification passes before the task/);
  });

  it('a verification of `true` under warn: the task runs, and its checkpoint says green->green', async () => {
    const h = await harness();
    const agent = new ScriptedAgent(async (input) => {
      await writeFile(join(input.workspaceDir, 'sum.js'), 'module.exports = (a, b) => a + b;\n');
    });
    // Plan validation flags it first (the planner must rewrite it; `goal-loop plan` warns).
    expect(verificationFlags(validateGoalSpec(spec('trivially-true', 'true')))).toEqual([expect.stringMatching(/tasks\[0\]\.verification: cannot fail/)]);
    const result = await h.run(spec('trivially-true', 'true'), { agent, verification: warn });
    expect(result.status).toBe('LOOP_COMPLETE');
    expect(goalCommits(h.repo.bare, 'goal/trivially-true')).toBe('fix-sum: Fix sum\ngreen->green');
    const entries = await h.ledger.listAttemptEntries({ repo: h.repo.bare, goalId: 'trivially-true' });
    expect(entries[0]!.entry).toMatchObject({ kind: 'baseline', passed: true, expect: 'red', policy: 'warn' });
  });

  it('two tasks with the same verification on the same tree take one baseline run', async () => {
    const h = await harness();
    const agent = new ScriptedAgent(async (input) => {
      // b gets nowhere (and escalates); c, on the same tree, fixes it.
      if (input.task.id === 'c') await writeFile(join(input.workspaceDir, 'sum.js'), 'module.exports = (a, b) => a + b;\n');
    });
    const result = await h.run(
      {
        goal_id: 'shared',
        objective: 'o',
        tasks: [
          { id: 'a', title: 'Docs', verification: 'grep -q usage README.md', run: 'echo usage >> README.md' },
          { id: 'b', title: 'Fix', verification: TESTS },
          { id: 'c', title: 'Also', verification: TESTS, dependencies: [] },
        ],
      },
      { agent, verification: warn },
    );
    expect(result.status).toBe('ESCALATED');
    expect(result.checkpoints.map((c) => c.task_id)).toEqual(['a', 'c']);
    const baselines = (await h.ledger.listAttemptEntries({ repo: h.repo.bare, goalId: 'shared' })).filter((e) => e.entry.kind === 'baseline');
    expect(baselines.map((e) => [e.taskId, (e.entry as { reused?: boolean }).reused ?? false])).toEqual([
      ['a', false],
      ['b', false],
      ['c', true],
    ]);
  });
});

describe('no paying for the same failure twice (real jail)', () => {
  it('two identical failures end with "no progress" after 2 attempts, not 3', async () => {
    const h = await harness();
    const agent = new ScriptedAgent(async (input) => {
      await writeFile(join(input.workspaceDir, 'notes.txt'), `tried ${input.attempt}\n`);
    });
    const result = await h.run(spec('no-progress', TESTS, { max_retries: 3 }), { agent, verification: warn });
    expect(result.status).toBe('ESCALATED');
    expect(agent.calls).toHaveLength(2);
    expect(result.escalation).toMatchObject({ attempts: 2, cause: 'no_progress' });
    expect(result.stop_reason).toMatch(/made no progress after 2 attempt/);
  });
});
