import { describe, expect, it } from 'vitest';
import { ConsoleForge } from '../../src/forge/console-forge.js';
import { missingSetupHint, summarizeFailure } from '../../src/goal/failure-summary.js';
import type { GoalSnapshot, TaskSnapshot } from '../../src/goal/result.js';

const JEST = `verification \`npm test\` exited with code 1:
PASS src/index.test.ts
FAIL src/slug.test.ts
  ✓ keeps ascii (2 ms)
  ✕ slugifies spaces (3 ms)
  ● slugifies spaces
    expect(received).toBe(expected) // Object.is equality
Tests: 1 failed, 2 passed, 3 total`;

const VITEST = `verification \`npx vitest run\` exited with code 1:
 ✓ src/index.test.ts (1 test) 2ms
 ❯ src/slug.test.ts (2 tests | 1 failed) 4ms
   × slugify > lowercases 3ms
AssertionError: expected 'A-b' to be 'a-b' // Object.is equality`;

const NOT_FOUND = `verification \`./node_modules/.bin/jest\` exited with code 127:
sh: 1: ./node_modules/.bin/jest: not found

${missingSetupHint('npm ci')}`;

describe("summarizeFailure: the one line shown for a task's last failure", () => {
  const cases: Array<{ name: string; error: string; width?: number; has: string[]; hasNot?: string[]; equals?: string }> = [
    {
      name: 'jest: the FAIL and ✕ lines, not the first PASS',
      error: JEST,
      has: ['verification `npm test` exited with code 1: ', 'FAIL src/slug.test.ts', '✕ slugifies spaces'],
      hasNot: ['PASS', '✓'],
    },
    { name: 'vitest: × and AssertionError', error: VITEST, width: 400, has: ['× slugify > lowercases', "AssertionError: expected 'A-b' to be 'a-b'"], hasNot: ['src/index.test.ts'] },
    {
      name: 'pytest',
      error: 'verification `pytest` exited with code 1:\n====\ntests/test_a.py .F\nFAILED tests/test_a.py::test_b - assert 1 == 2\n==== 1 failed, 1 passed in 0.1s',
      has: ['FAILED tests/test_a.py::test_b - assert 1 == 2'],
      hasNot: ['test_a.py .F'],
    },
    {
      name: 'TAP: a named error before the generic lines that precede it',
      error: "verification `node --test` exited with code 1:\nnot ok 1 - tests/a.test.js\n  error: 'test failed'\n    ReferenceError: require is not defined in ES module scope",
      width: 130,
      has: ['exited with code 1: ReferenceError: require is not defined in ES module scope'],
    },
    { name: 'TAP: not ok, not ok-free lines', error: 'verification `node --test` exited with code 1:\nok 1 - a\nnot ok 2 - b\n# pass 1', has: ['not ok 2 - b'], hasNot: ['ok 1 - a'] },
    {
      name: 'a plain command: its last lines',
      error: 'verification `test -f x` exited with code 1:\nchecking\nx is missing',
      has: ['verification `test -f x` exited with code 1: ', 'checking | x is missing'],
    },
    { name: 'only the very last line when long lines do not fit', error: `run step \`make\` exited with code 2:\n${'a'.repeat(120)}\nthe end`, has: [': the end'], hasNot: ['aaa'] },
    { name: 'no output', error: 'verification `false` exited with code 1 (no output)', equals: 'verification `false` exited with code 1 (no output)', has: [] },
    { name: 'a one-line agent error', error: 'agent failed: the model refused', equals: 'agent failed: the model refused', has: [] },
    {
      name: 'colours and cursor moves dropped',
      error: 'verification `t` exited with code 1:\n\x1b[31mFAIL\x1b[39m a.test.ts\x1b[2K\r',
      equals: 'verification `t` exited with code 1: FAIL a.test.ts',
      has: [],
    },
    {
      name: 'the cut marker is not a reason',
      error: 'verification `t` exited with code 1:\nstart\n[… 5000 bytes cut; full log: /tmp/x.log …]\nlast line',
      has: ['start | last line'],
      hasNot: ['bytes cut'],
    },
    {
      name: 'a timeout headline',
      error: 'verification `sleep 9` timed out after 5s and was killed:\nwaiting...',
      equals: 'verification `sleep 9` timed out after 5s and was killed: waiting...',
      has: [],
    },
    {
      name: 'command not found with the setup hint: the reason and a short hint, not the yaml',
      error: NOT_FOUND,
      width: 400,
      has: ['exited with code 127: sh: 1: ./node_modules/.bin/jest: not found', 'no setup ran'],
      hasNot: ['network: setup', '- npm ci'],
    },
  ];
  it.each(cases)('$name', ({ error, width, has, hasNot, equals }) => {
    const line = summarizeFailure(error, width);
    expect(line).not.toContain('\n');
    if (equals !== undefined) expect(line).toBe(equals);
    for (const s of has) expect(line).toContain(s);
    for (const s of hasNot ?? []) expect(line).not.toContain(s);
  });

  it.each([40, 80, 160])('fits in %i characters, cut with …', (width) => {
    for (const error of [JEST, VITEST, NOT_FOUND, `verification \`${'x'.repeat(300)}\` exited with code 1:\n${'FAIL '.repeat(100)}`]) {
      const line = summarizeFailure(error, width);
      expect(Array.from(line).length).toBeLessThanOrEqual(width);
    }
    expect(summarizeFailure(`verification \`t\` exited with code 1:\n${'FAIL '.repeat(100)}`, width)).toMatch(/…$/);
  });

  it('keeps the headline short enough to leave room for the reason', () => {
    const line = summarizeFailure(`verification \`${'x'.repeat(300)}\` exited with code 1:\nFAIL the reason`, 100);
    expect(line).toContain('FAIL the reason');
  });
});

function stream(columns?: number) {
  const chunks: string[] = [];
  const s = {
    write: (c: unknown) => {
      chunks.push(String(c));
      return true;
    },
    columns,
    isTTY: false,
    on: () => s,
    off: () => s,
    once: () => s,
    removeListener: () => s,
  };
  return { s: s as unknown as NodeJS.WriteStream, text: () => chunks.join('') };
}

function snapshot(task: Partial<TaskSnapshot>): GoalSnapshot {
  return {
    goalId: 'g',
    objective: 'o',
    repo: '/r',
    branch: 'goal/g',
    state: 'EXECUTING',
    tasks: [{ id: 'slug', title: 'Slugify', dependencies: [], status: 'running', attempts: 1, ...task }],
    iterations: 1,
    tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 },
    costUsd: 0,
    limits: { max_iterations: 50, cost_cap_usd: 10 } as GoalSnapshot['limits'],
    startedAt: 0,
  };
}

describe('ConsoleForge: the last failure line', () => {
  it('plain mode shows the failing lines, not the first line of the output', async () => {
    const out = stream();
    const forge = new ConsoleForge({ stream: out.s, live: false, color: false });
    await forge.update(snapshot({ lastError: JEST }));
    expect(out.text()).toMatch(/ {2}last failure: verification `npm test` exited with code 1: FAIL src\/slug\.test\.ts \| ✕ slugifies spaces/);
    expect(out.text()).not.toContain('PASS');
  });

  it('plain mode on a narrow terminal: one line within its width', async () => {
    const out = stream(60);
    const forge = new ConsoleForge({ stream: out.s, live: false, color: false });
    await forge.update(snapshot({ lastError: VITEST }));
    const line = out
      .text()
      .split('\n')
      .find((l) => l.includes('last failure'))!;
    expect(Array.from(line).length).toBeLessThanOrEqual(60);
  });

  it('live mode shows the same line under the task', async () => {
    const out = stream(200);
    const forge = new ConsoleForge({ stream: out.s, live: true, color: false });
    await forge.update(snapshot({ lastError: NOT_FOUND }));
    await forge.finished(
      {
        goal_id: 'g',
        status: 'ESCALATED',
        success: false,
        tasks_completed: 0,
        tasks_total: 1,
        iterations: 1,
        errors_recovered: 0,
        tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 },
        cost_usd: 0,
        duration_s: 1,
        stop_reason: null,
        branch: 'goal/g',
        checkpoints: [],
      } as never,
      snapshot({ lastError: NOT_FOUND, status: 'escalated' }),
    );
    expect(out.text()).toContain('last failure: verification `./node_modules/.bin/jest` exited with code 127: sh: 1: ./node_modules/.bin/jest: not found (no setup ran');
  });
});

describe('ConsoleForge: the escalation message', () => {
  it('keeps the hint and, with it, advises the repo config instead of a push to the goal branch', async () => {
    const out = stream();
    const forge = new ConsoleForge({ stream: out.s, live: false, color: false });
    await forge.escalate(snapshot({}), { task_id: 'slug', attempts: 1, last_error: NOT_FOUND });
    expect(out.text()).toContain('      setup:\n        - npm ci\n      network: setup\n');
    expect(out.text()).toMatch(/Add the setup to the repo config \(see the hint\)/);
    expect(out.text()).not.toMatch(/push to it/);
    const plain = stream();
    await new ConsoleForge({ stream: plain.s, live: false, color: false }).escalate(snapshot({}), { task_id: 'slug', attempts: 2, last_error: JEST });
    expect(plain.text()).toMatch(/Fix it on the goal branch \(push to it\)/);
  });

  it('a failure longer than its excerpt is told in one line first: a TAP footer does not hide what failed (seen on tj/commander.js)', async () => {
    const tap = [
      'verification `node --test tests/flag.test.js` exited with code 1:',
      'TAP version 13',
      'not ok 1 - tests/flag.test.js',
      '  ---',
      "  error: 'test failed'",
      '  stack: |-',
      '    ReferenceError: require is not defined in ES module scope, you can use import instead',
      ...['ModuleJob.run', 'onImport.tracePromise.__proto__', 'asyncRunEntryPointWithESMLoader'].map((f) => `        at ${f} (node:internal/modules/esm/module_job:1:1)`),
      '  ...',
      '1..1',
      '# tests 1',
      '# suites 0',
      '# pass 0',
      '# fail 1',
      '# cancelled 0',
      '# skipped 0',
      '# todo 0',
      '# duration_ms 41.2',
      "  failureType: 'testCodeFailure'",
      '  exitCode: 1',
    ].join('\n');
    const out = stream();
    await new ConsoleForge({ stream: out.s, live: false, color: false }).escalate(snapshot({}), { task_id: 'slug', attempts: 2, last_error: tap });
    expect(out.text()).toMatch(/^Last failure: verification `node --test tests\/flag\.test\.js` exited with code 1: .*ReferenceError: require is not defined/m);
    expect(out.text()).not.toContain('    ReferenceError');
    const short = stream();
    await new ConsoleForge({ stream: short.s, live: false, color: false }).escalate(snapshot({}), { task_id: 'slug', attempts: 2, last_error: JEST });
    expect(short.text()).toMatch(/^Last failure:\n/m);
  });

  it('names what else escalated, what was done meanwhile and what is still blocked', async () => {
    const out = stream();
    await new ConsoleForge({ stream: out.s, live: false, color: false }).escalate(snapshot({}), {
      task_id: 'slug',
      attempts: 2,
      last_error: JEST,
      also_escalated: ['lint'],
      done_meanwhile: ['docs'],
      blocked: ['release', 'publish'],
    });
    expect(out.text()).toMatch(/Also escalated: lint\.\nDone meanwhile \(verified and checkpointed\): docs\.\nStill blocked \(they depend on an escalated task\): release, publish\./);
  });
});

describe('ConsoleForge: verification evidence', () => {
  it('a task stopped by its green baseline says it did not run and why, and another escalated task says its reason', async () => {
    const out = stream();
    const s = snapshot({});
    s.tasks.push({ id: 'lint', title: 'Lint', dependencies: [], status: 'escalated', attempts: 0, lastError: 'no red before green: task lint already passes' });
    await new ConsoleForge({ stream: out.s, live: false, color: false }).escalate(s, {
      task_id: 'slug',
      attempts: 0,
      cause: 'passes_before',
      last_error: 'no red before green: the verification already passes',
      also_escalated: ['lint'],
    });
    expect(out.text()).toMatch(/^escalated: task slug did not run: its verification already passes before the task \(verification_baseline: require_red\)\.\nWhy:/);
    expect(out.text()).toContain('Also escalated: lint (no red before green: task lint already passes).');
  });

  it('no progress is named as such', async () => {
    const out = stream();
    await new ConsoleForge({ stream: out.s, live: false, color: false }).escalate(snapshot({}), { task_id: 'slug', attempts: 2, cause: 'no_progress', last_error: JEST });
    expect(out.text()).toMatch(/^escalated: task slug made no progress: its last verification failures were identical, after 2 attempt\(s\)\./);
  });

  it('a task whose verification passed before it ran carries a warning on its line', async () => {
    const out = stream();
    await new ConsoleForge({ stream: out.s, live: false, color: false }).update(snapshot({ status: 'done', attempts: 1, passedBefore: true }));
    expect(out.text()).toContain('⚠ its verification passed before the task ran');
  });
});

describe('ConsoleForge: the setup line, before the first task', () => {
  const setupSnapshot = (setup: GoalSnapshot['setup']) => ({ ...snapshot({ status: 'pending', attempts: 0 }), state: 'INITIALIZING' as const, setup });

  it('live: running with its command and the time so far, above the tasks', async () => {
    const out = stream(200);
    const forge = new ConsoleForge({ stream: out.s, live: true, color: false, clock: () => 12_300 });
    await forge.update(setupSnapshot({ status: 'running', command: 'npm ci', startedAt: 0 }));
    const lines = out.text().split('\n');
    const at = lines.findIndex((l) => l.includes('setup'));
    expect(lines[at]).toBe('◐ setup  npm ci  running 12.3s');
    expect(lines.findIndex((l) => l.includes('Slugify'))).toBeGreaterThan(at);
  });

  it('plain: a line when it starts, one per command, and one when it ends (done, restored, or failed with why)', async () => {
    const out = stream();
    const forge = new ConsoleForge({ stream: out.s, live: false, color: false, clock: () => 5_000 });
    await forge.update(setupSnapshot({ status: 'running', command: 'pnpm install', startedAt: 0 }));
    await forge.update(setupSnapshot({ status: 'running', command: 'pnpm install', startedAt: 0 }));
    await forge.update(setupSnapshot({ status: 'done', command: 'pnpm install', startedAt: 0, durationMs: 14_000 }));
    expect(out.text()).toBe('◐ setup  pnpm install  running 5.0s\n✔ setup  pnpm install  done 14.0s\n');

    const restored = stream();
    await new ConsoleForge({ stream: restored.s, live: false, color: false }).update(setupSnapshot({ status: 'done', startedAt: 0, durationMs: 800, restored: true }));
    expect(restored.text()).toBe('✔ setup  restored from the setup cache  done 0.8s\n');

    const failed = stream();
    await new ConsoleForge({ stream: failed.s, live: false, color: false }).update(
      setupSnapshot({ status: 'failed', command: 'pnpm\ninstall \x1b[31m', startedAt: 0, durationMs: 60_000, failure: '`pnpm install` stalled: no output, no file written, no CPU for 60s' }),
    );
    expect(failed.text()).toBe('✖ setup  pnpm install  failed 1m00s  `pnpm install` stalled: no output, no file written, no CPU for 60s\n');
  });
});

describe('ConsoleForge: the end of a run', () => {
  it('prints the final line of a task whose last change came with the end (plain mode)', async () => {
    const out = stream();
    const forge = new ConsoleForge({ stream: out.s, live: false, color: false });
    await forge.update(snapshot({ status: 'running', attempts: 0 }));
    const s = snapshot({ status: 'escalated', attempts: 0 });
    const result = {
      goal_id: 'g',
      status: 'ESCALATED',
      success: false,
      tasks_completed: 0,
      tasks_total: 1,
      iterations: 0,
      errors_recovered: 0,
      tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 },
      cost_usd: 0,
      duration_s: 1,
      stop_reason: 'x',
      branch: 'goal/g',
      checkpoints: [],
    } as const;
    await forge.finished({ ...result, checkpoints: [] }, s);
    const lines = out.text().split('\n');
    expect(lines.some((l) => l.startsWith('✖ ') && l.includes('escalated'))).toBe(true);
    expect(lines.findIndex((l) => l.startsWith('✖ '))).toBeLessThan(lines.findIndex((l) => l.startsWith('ESCALATED')));
  });
});
