import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteLedger } from '../../src/ledger/sqlite/sqlite-ledger.js';
import { ATTEMPT_MAX_BYTES, ATTEMPT_MAX_ENTRIES, AttemptRecorder } from '../../src/loop/attempt-recorder.js';
import type { AgentInput, TaskAgent } from '../../src/ports/agent.js';
import { goalHarness, silentLogger } from '../helpers/goal-harness.js';
import { tempDir } from '../helpers/temp.js';

const NO_USAGE = { input: 0, output: 0, cache_read: 0, cache_write: 0 };

/** An agent that fixes the task on its second attempt, reporting its turns as the Claude agent does. */
const repairingAgent: TaskAgent = {
  name: 'repairing',
  async work(input: AgentInput) {
    await input.onTurn?.({
      turn: 1,
      text: `Attempt ${input.attempt}: reading the failing test.`,
      tools: [{ name: 'read_file', input: 'sum.test.js', result: 'expect(sum(1, 2)).toBe(3)', isError: false }],
    });
    if (input.attempt > 1) {
      await input.onTurn?.({ turn: 2, text: 'Writing the fix.', tools: [{ name: 'run_command', input: 'echo fixed > fixed.txt', result: 'exit 0', isError: false }] });
    }
    return { ok: true, usage: { input: 100, output: 20, cache_read: 0, cache_write: 0 }, costUsd: 0.01 };
  },
};

describe('the attempt record, written as the loop goes', () => {
  it("keeps each attempt's run steps, agent turns, verification, diffstat, tokens, cost and why it ended", async () => {
    const h = await goalHarness();
    const spec = {
      goal_id: 'record',
      objective: 'o',
      tasks: [{ id: 'fix', title: 'Fix', run: 'echo prepared', verification: 'test -f fixed.txt || { echo "FAIL sum.test.js:3 expected 3"; exit 1; }', max_retries: 2 }],
    };
    // The agent only writes on attempt 2: emulate its write with a run step keyed on the attempt.
    spec.tasks[0]!.run = 'echo prepared; if [ "$GOAL_ATTEMPT" -gt 1 ]; then echo fixed > fixed.txt; fi';
    const result = await h.run(spec, { agent: repairingAgent });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');

    const entries = await h.ledger.listAttemptEntries({ repo: h.repo.bare, goalId: 'record' }, { taskId: 'fix' });
    const byAttempt = (n: number) => entries.filter((e) => e.attempt === n).map((e) => e.entry);
    const first = byAttempt(1);
    // The baseline (the verification before any change) opens the first attempt.
    expect(first.map((e) => e.kind)).toEqual(['baseline', 'step', 'turn', 'verify', 'end']);
    expect(first[0]).toMatchObject({ kind: 'baseline', passed: false, exitCode: 1, expect: 'red', policy: 'warn', tail: expect.stringContaining('FAIL sum.test.js:3') });
    expect(first[1]).toMatchObject({ kind: 'step', exitCode: 0, tail: expect.stringContaining('prepared') });
    expect(first[2]).toMatchObject({ kind: 'turn', turn: 1, tools: [{ name: 'read_file', input: 'sum.test.js' }] });
    expect(first[3]).toMatchObject({ kind: 'verify', passed: false, exitCode: 1, tail: expect.stringContaining('FAIL sum.test.js:3') });
    expect(first[4]).toMatchObject({ kind: 'end', outcome: 'failed', costUsd: 0.01, tokens: { input: 100, output: 20 } });

    const second = byAttempt(2);
    expect(second.map((e) => e.kind)).toEqual(['step', 'turn', 'turn', 'verify', 'checkpoint', 'end']);
    expect(second[4]).toMatchObject({ kind: 'checkpoint', files: 1, insertions: 1, deletions: 0, stat: 'fixed.txt +1 -0', evidence: 'red->green' });
    expect(second[5]).toMatchObject({ kind: 'end', outcome: 'passed', reason: '1 file(s) changed, +1 -0' });
    expect((second[4] as { sha: string }).sha).toBe(result.checkpoints.find((c) => c.task_id === 'fix')!.sha);
  });

  it('a failed run step ends its attempt with the failure; a timeout says timeout', async () => {
    const h = await goalHarness();
    const spec = { goal_id: 'fails', objective: 'o', limits: { task_timeout_s: 1 }, tasks: [{ id: 'slow', title: 'Slow', run: 'sleep 5', verification: 'true', max_retries: 1 }] };
    const result = await h.run(spec);
    expect(result.status).toBe('ESCALATED');
    const entries = (await h.ledger.listAttemptEntries({ repo: h.repo.bare, goalId: 'fails' }, { taskId: 'slow', attempt: 1 })).map((e) => e.entry);
    expect(entries.map((e) => e.kind)).toEqual(['baseline', 'step', 'end']);
    expect(entries[0]).toMatchObject({ kind: 'baseline', passed: true });
    expect(entries[1]).toMatchObject({ kind: 'step', timedOut: true, exitCode: null });
    expect(entries[2]).toMatchObject({ kind: 'end', outcome: 'timeout' });
  });

  it('setup is an attempt per run; a setup that leaves a nested repository ends refused; a file name cannot forge stat lines; no cut splits an emoji', async () => {
    const h = await goalHarness();
    const key = { repo: h.repo.bare, goalId: 'per-run' };
    const spec = { goal_id: 'per-run', objective: 'o', tasks: [{ id: 'odd', title: 'Odd name', run: 'printf x > "$(printf \'a\\nREADME.md +9 -0\')"', verification: 'false', max_retries: 1 }] };
    expect((await h.run(spec, { setup: ['echo one'] })).status).toBe('ESCALATED');
    expect((await h.run(spec, { setup: ['echo two'] })).status).toBe('ESCALATED');
    const setups = await h.ledger.listAttemptEntries(key, { taskId: 'setup' });
    expect(setups.map((e) => [e.attempt, e.entry.kind])).toEqual([
      [1, 'step'],
      [1, 'end'],
      [2, 'step'],
      [2, 'end'],
    ]);

    const nested = await goalHarness();
    const refused = await nested.run({ ...spec, goal_id: 'nested' }, { setup: ['mkdir -p vendor/x && git init -q vendor/x'] });
    expect(refused.status).toBe('ESCALATED');
    const ends = (await nested.ledger.listAttemptEntries({ repo: nested.repo.bare, goalId: 'nested' }, { taskId: 'setup' })).filter((e) => e.entry.kind === 'end');
    expect(ends.map((e) => e.entry)).toMatchObject([{ kind: 'end', outcome: 'refused' }]);

    const rec = new AttemptRecorder(h.ledger, key, silentLogger);
    await rec.checkpoint('odd', 9, 'f'.repeat(40), { files: 1, insertions: 1, deletions: 0, paths: [{ path: 'a\nREADME.md +9 -0', added: 1, deleted: 0 }] });
    await rec.end('odd', 9, 'failed', `${'x'.repeat(298)}😀 and more`);
    const [cp, end] = (await h.ledger.listAttemptEntries(key, { taskId: 'odd', attempt: 9 })).map((e) => e.entry);
    expect(cp).toMatchObject({ kind: 'checkpoint', stat: 'a\\x0aREADME.md +9 -0 +1 -0' });
    expect(end!.kind === 'end' && end!.reason).toBe(`${'x'.repeat(298)}…`);
  });

  it('a 200-turn attempt stays within its bound: a truncation marker, then only its verification and end', async () => {
    const root = await tempDir();
    const ledger = new SqliteLedger(join(root, 'ledger.db'));
    try {
      const key = { repo: 'r', goalId: 'g' };
      await ledger.upsertGoal(key, { spec: { goal_id: 'g', objective: 'o', tasks: [{ id: 't', title: 'T', run: [], verification: 'true', dependencies: [] }] } as never, branch: 'goal/g' });
      const rec = new AttemptRecorder(ledger, key, silentLogger);
      for (let turn = 1; turn <= 200; turn++) {
        await rec.turn('t', 1, {
          turn,
          text: `thinking ${'x'.repeat(5000)}`,
          tools: Array.from({ length: 30 }, (_, i) => ({ name: 'read_file', input: `src/file-${i}.ts`.repeat(50), result: 'y'.repeat(10_000), isError: false })),
        });
      }
      await rec.verify('t', 1, 'npm test', { exitCode: 1, signal: null, timedOut: false, aborted: false, output: 'FAIL src/a.test.ts:3:1', outputBytes: 22, truncated: false, durationMs: 9 });
      rec.spent('t', 1, { ...NO_USAGE, input: 5 }, 0.5);
      await rec.end('t', 1, 'turn_limit', 'turn limit reached (200 model requests)');
      const entries = (await ledger.listAttemptEntries(key)).map((e) => e.entry);
      expect(entries.length).toBeLessThanOrEqual(ATTEMPT_MAX_ENTRIES + 2);
      const bytes = entries.reduce((n, e) => n + JSON.stringify(e).length, 0);
      expect(bytes).toBeLessThanOrEqual(ATTEMPT_MAX_BYTES + 2048);
      expect(entries.filter((e) => e.kind === 'truncated')).toHaveLength(1);
      // The verification and the end survive the bound: they are what a reader needs.
      expect(entries.slice(-2)).toMatchObject([
        { kind: 'verify', tail: 'FAIL src/a.test.ts:3:1' },
        { kind: 'end', outcome: 'turn_limit', costUsd: 0.5 },
      ]);
      const turn = entries[0]!;
      expect(turn.kind === 'turn' ? turn.tools.length : undefined).toBe(21); // 20 calls and a "more" line
      expect(turn.kind === 'turn' ? turn.text.length : undefined).toBeLessThanOrEqual(1200);
    } finally {
      await ledger.close();
    }
  });
});
