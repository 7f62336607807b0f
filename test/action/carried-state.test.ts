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
});
