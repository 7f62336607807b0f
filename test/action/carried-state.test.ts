import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CARRIED_STATE_PREFIX, type CarriedState, carriedLine, readCarriedState } from '../../src/action/carried-state.js';
import { validateGoalSpec } from '../../src/goal/parse.js';

const spec = validateGoalSpec({ objective: 'Ship it', tasks: [{ id: 'a', title: 'A', verification: 'true' }] }, { defaultGoalId: '7' });

function state(over: Partial<CarriedState> = {}): CarriedState {
  return {
    goalId: '7',
    spec,
    branch: 'goal/7-ship-it',
    priority: 'P2',
    state: 'EXECUTING',
    stopReason: null,
    control: null,
    counters: { iterations: 3, errors: 0, errors_recovered: 0, tokens: { input: 10, output: 5, cache_read: 0, cache_write: 0 }, cost_usd: 0.42 },
    tasks: [{ taskId: 'a', status: 'running', attempts: 2, checkpointSha: null, lastError: 'exit 1', approved: false }],
    github: { issueNumber: 7, issueTitle: 'Ship it', branch: 'goal/7-ship-it', author: 'alice', assignees: [] },
    meta: { planApproved: true },
    attempts: [{ taskId: 'a', attempt: 1, at: '2026-12-01T00:00:00.000Z', entry: { kind: 'verify', command: 'true', exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: 'boom' } }],
    runner: { runId: '42', attempt: '1' },
    ...over,
  };
}

const line = (json: unknown) => `${CARRIED_STATE_PREFIX}${gzipSync(Buffer.from(JSON.stringify(json))).toString('base64')} -->`;

describe('the goal record a status comment carries', () => {
  it("reads back what it wrote, as the comment's last line", () => {
    const body = `<!-- goal-loop:status -->\n\n### goal-loop: Ship it\n\n${carriedLine(state(), 'x')}`;
    expect(readCarriedState(body).state).toEqual(state());
  });

  it('is no record unless it is the last line (quoted in the middle of a comment, it is text)', () => {
    const body = `<!-- goal-loop:status -->\n${carriedLine(state(), 'x')}\n\nand then some text`;
    expect(readCarriedState(body)).toEqual({});
  });

  it('refuses a record that is not base64, not gzip, not valid, or whose spec is not a spec', () => {
    expect(readCarriedState(`${CARRIED_STATE_PREFIX}not base64! -->`).problem).toMatch(/not base64/);
    expect(readCarriedState(`${CARRIED_STATE_PREFIX}${Buffer.from('plain').toString('base64')} -->`).problem).toMatch(/cannot be read/);
    expect(readCarriedState(line({ ...state(), counters: 'none' })).problem).toMatch(/not valid/);
    expect(readCarriedState(line({ ...state(), spec: { objective: 'x', tasks: [{ id: 'a', title: 'A', verification: 'true', dependencies: ['a'] }] } })).problem).toMatch(/spec is not valid/);
  });

  it('refuses a record that inflates past 8 MiB (a gzip bomb in a comment)', () => {
    const bomb = gzipSync(Buffer.alloc(9 * 1024 * 1024, 0x20)).toString('base64');
    expect(bomb.length).toBeLessThan(65_536);
    expect(readCarriedState(`${CARRIED_STATE_PREFIX}${bomb} -->`).problem).toMatch(/cannot be read/);
  });

  it('fits in what GitHub takes for a comment: the attempt record gives way, never the spend', () => {
    const noisy = Array.from({ length: 400 }, (_, i) => ({
      taskId: 'a',
      attempt: i + 1,
      at: '2026-12-01T00:00:00.000Z',
      entry: { kind: 'verify' as const, command: `npm test -- ${i}`, exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: randomBytes(1100).toString('base64') },
    }));
    const report = 'r'.repeat(50_000);
    const carried = carriedLine(state({ attempts: noisy }), report);
    expect(report.length + 2 + carried.length).toBeLessThanOrEqual(65_536);
    const back = readCarriedState(carried).state!;
    expect(back.counters).toEqual(state().counters);
    expect(back.tasks).toEqual(state().tasks);
    expect(back.attempts.length).toBeGreaterThan(0);
    expect(back.attempts.length).toBeLessThan(noisy.length);
    expect(back.attempts.at(-1)!.attempt).toBe(400); // the newest attempts are the ones kept
  });

  it("carries a task's baseline and its checkpoint's evidence, and reads a record carried before they existed", () => {
    const baseline = {
      kind: 'baseline' as const,
      command: 'npm test',
      exitCode: 1,
      durationMs: 900,
      timedOut: false,
      passed: false,
      tail: 'FAIL',
      reused: true,
      expect: 'red' as const,
      policy: 'require_red' as const,
    };
    const checkpoint = { kind: 'checkpoint' as const, sha: 'a'.repeat(40), files: 1, insertions: 2, deletions: 0, stat: 'src/a.ts +2 -0', evidence: 'red->green' as const };
    const at = '2026-12-01T00:00:00.000Z';
    const withEvidence = state({
      attempts: [
        { taskId: 'a', attempt: 1, at, entry: baseline },
        { taskId: 'a', attempt: 1, at, entry: checkpoint },
      ],
    });
    expect(readCarriedState(carriedLine(withEvidence, 'x')).state).toEqual(withEvidence);
    // Written before evidence: a checkpoint without it, and no baseline.
    const { evidence: _, ...older } = checkpoint;
    const before = state({ attempts: [{ taskId: 'a', attempt: 1, at, entry: older }] });
    expect(readCarriedState(line(before)).state).toEqual(before);
  });

  it('refuses a checkpoint whose evidence is not one of the three, and a baseline not as written', () => {
    const at = '2026-12-01T00:00:00.000Z';
    const checkpoint = { kind: 'checkpoint', sha: 'a'.repeat(40), files: 1, insertions: 2, deletions: 0, stat: '', evidence: 'bogus' };
    expect(readCarriedState(line({ ...state(), attempts: [{ taskId: 'a', attempt: 1, at, entry: checkpoint }] })).problem).toMatch(/not valid/);
    const baseline = { kind: 'baseline', command: 'npm test', exitCode: 0, durationMs: 9, timedOut: false, passed: true, tail: '', expect: 'maybe', policy: 'warn' };
    expect(readCarriedState(line({ ...state(), attempts: [{ taskId: 'a', attempt: 1, at, entry: baseline }] })).problem).toMatch(/not valid/);
  });

  it("trims a baseline's output like a verification's, and keeps baselines, checkpoints and ends longest when the record does not fit", () => {
    const at = '2026-12-01T00:00:00.000Z';
    const noisy = Array.from({ length: 300 }, (_, i) => [
      ...(i === 0
        ? [
            {
              taskId: 'a',
              attempt: 1,
              at,
              entry: {
                kind: 'baseline' as const,
                command: 'npm test',
                exitCode: 0,
                durationMs: 5,
                timedOut: false,
                passed: true,
                tail: randomBytes(1100).toString('base64'),
                expect: 'red' as const,
                policy: 'warn' as const,
              },
            },
          ]
        : []),
      {
        taskId: 'a',
        attempt: i + 1,
        at,
        entry: { kind: 'verify' as const, command: `npm test -- ${i}`, exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: randomBytes(1100).toString('base64') },
      },
      {
        taskId: 'a',
        attempt: i + 1,
        at,
        entry: { kind: 'end' as const, outcome: 'failed' as const, reason: 'verification failed', tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 }, costUsd: 0, durationMs: 5 },
      },
    ]).flat();
    const back = readCarriedState(carriedLine(state({ attempts: noisy }), 'r'.repeat(30_000))).state!;
    const first = back.attempts[0]!;
    expect(first.entry).toMatchObject({ kind: 'baseline', passed: true, expect: 'red' });
    expect(first.entry.kind === 'baseline' ? first.entry.tail.length : -1).toBe(200);
    expect(back.attempts.filter((a) => a.entry.kind === 'verify').length).toBeLessThan(300);
    // Each attempt's end outlasts the older attempts' output: every attempt still says how it ended.
    expect(back.attempts.filter((a) => a.entry.kind === 'end')).toHaveLength(300);
    expect(back.attempts.at(-1)!.attempt).toBe(300);
  });
});
