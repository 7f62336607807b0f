import { describe, expect, it } from 'vitest';
import { renderAttemptEntries } from '../../src/cli/render-attempts.js';
import { SETUP_README } from '../../src/goal/setup-hint.js';
import type { CommandRequest } from '../../src/ports/sandbox.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { memoryGoalHarness } from '../helpers/memory-goal-harness.js';

// Setup as a step of its own (issue 24): its own timeout and stall bound, a hint at the likely
// cause, live progress, and a record whose durations are true. Time is a counter the scripted
// sandbox moves forward as a command "runs".
const SPEC = { goal_id: 'deps', objective: 'x', tasks: [{ id: 't', title: 'T', run: 'write a', verification: 'exists a' }] };

function timed(answer: (r: CommandRequest) => { ms: number; result?: Record<string, unknown> } | undefined) {
  const clock = { now: 1_000_000 };
  const requests: CommandRequest[] = [];
  const h = memoryGoalHarness({
    step: (r) => {
      if (r.env?.GOAL_TASK_ID !== 'setup') return undefined;
      requests.push(r);
      const a = answer(r);
      if (!a) return undefined;
      clock.now += a.ms;
      return { durationMs: a.ms, ...a.result };
    },
  });
  return { h, clock, requests, opts: { clock: () => clock.now } };
}

describe('the setup step', () => {
  it('times its end from before its first command: the end covers every command', async () => {
    const { h, opts } = timed((r) => ({ ms: r.command === 'pnpm install' ? 13_500 : 2_000 }));
    const result = await h.run(SPEC, { ...opts, setup: ['pnpm install', 'pnpm build'] });
    expect(result.status).toBe('LOOP_COMPLETE');
    const entries = await h.ledger.listAttemptEntries(h.key('deps'), { taskId: 'setup' });
    expect(entries.map((e) => [e.entry.kind, 'durationMs' in e.entry ? e.entry.durationMs : undefined])).toEqual([
      ['step', 13_500],
      ['step', 2_000],
      ['end', 15_500],
    ]);
  });

  it('a timed-out setup says how long it ran, not 0 ms, with its own timeout', async () => {
    const { h, opts, requests } = timed(() => ({ ms: 90_000, result: { exitCode: null, timedOut: true, signal: 'SIGKILL' } }));
    const result = await h.run(SPEC, { ...opts, setup: ['npm ci'], setupOptions: { timeoutS: 90 } });
    expect(result.status).toBe('ESCALATED');
    expect(requests[0]).toMatchObject({ timeoutMs: 90_000, stallMs: 45_000 });
    expect(result.escalation!.last_error).toMatch(/^setup `npm ci` timed out after 90s and was killed/);
    const end = (await h.ledger.listAttemptEntries(h.key('deps'), { taskId: 'setup' })).at(-1)!.entry;
    expect(end).toMatchObject({ kind: 'end', outcome: 'timeout', durationMs: 90_000 });
  });

  it('the setup timeout defaults to the task timeout', async () => {
    const { h, opts, requests } = timed(() => ({ ms: 10 }));
    await h.run({ ...SPEC, limits: { task_timeout_s: 321 } }, { ...opts, setup: ['npm ci'] });
    expect(requests[0]!.timeoutMs).toBe(321_000);
  });

  it('a stalled install behind a proxy fails with the cause: the CA variable the host has and setup does not get', async () => {
    const { h, opts, requests } = timed(() => ({ ms: 45_000, result: { exitCode: null, stalled: true, signal: 'SIGKILL', output: 'Progress: resolved 442, reused 0, downloaded 0, added 0' } }));
    const result = await h.run(SPEC, {
      ...opts,
      setup: ['pnpm install --frozen-lockfile'],
      setupNetwork: true,
      setupOptions: { stallS: 45, unpassedHostNames: ['NODE_EXTRA_CA_CERTS'] },
    });
    expect(requests[0]!.stallMs).toBe(45_000);
    const error = result.escalation!.last_error;
    expect(error).toMatch(/^setup `pnpm install --frozen-lockfile` stalled \(no output, no file written and no CPU used for 45s\) and was killed:\nProgress: resolved 442/);
    expect(error).toContain('`setup_env: [NODE_EXTRA_CA_CERTS]`');
    expect(error.trimEnd().endsWith(SETUP_README.proxy)).toBe(true);
    const entries = await h.ledger.listAttemptEntries(h.key('deps'), { taskId: 'setup' });
    expect(entries.map((e) => e.entry)).toMatchObject([
      { kind: 'step', stalled: true, exitCode: null },
      { kind: 'end', outcome: 'timeout', durationMs: 45_000 },
    ]);
    expect(renderAttemptEntries(entries)).toContain('$ pnpm install --frozen-lockfile  stalled · 45.0 s');
  });

  it('is shown live: running with each command, then done with its duration', async () => {
    const { h, opts } = timed(() => ({ ms: 7_000 }));
    await h.run(SPEC, { ...opts, setup: ['npm ci', 'npm run build'] });
    const setups = h.forge.updates.map((u) => u.setup).filter((s) => s !== undefined);
    const distinct = setups.filter((s, i) => JSON.stringify(s) !== JSON.stringify(setups[i - 1]));
    expect(distinct.slice(0, 3)).toEqual([
      { status: 'running', command: 'npm ci', startedAt: 1_000_000 },
      { status: 'running', command: 'npm run build', startedAt: 1_000_000 },
      { status: 'done', command: 'npm run build', startedAt: 1_000_000, durationMs: 14_000 },
    ]);
    // The first task's updates still carry it: the terminal and the status comment keep the line.
    expect(h.forge.updates.at(-1)!.setup).toMatchObject({ status: 'done' });
  });

  it('a failed setup is shown failed, with the command and how it ended', async () => {
    const { h, opts } = timed(() => ({ ms: 3_000, result: { exitCode: 1, output: 'ERR_PNPM_OUTDATED_LOCKFILE' } }));
    const result = await h.run(SPEC, { ...opts, setup: ['pnpm install --frozen-lockfile'] });
    expect(result.escalation!.last_error).toContain(SETUP_README.lockfile);
    expect(h.forge.updates.map((u) => u.setup).findLast((s) => s !== undefined)).toEqual({
      status: 'failed',
      command: 'pnpm install --frozen-lockfile',
      startedAt: 1_000_000,
      durationMs: 3_000,
      failure: '`pnpm install --frozen-lockfile` exited with code 1',
    });
  });

  it('a sandbox that cannot run setup ends its record and its line, and the run fails as its preparation', async () => {
    const h = memoryGoalHarness({
      step: (r) => {
        if (r.env?.GOAL_TASK_ID === 'setup') throw new Error('bwrap: cannot mount /proc');
        return undefined;
      },
    });
    const result = await h.run(SPEC, { setup: ['npm ci'] });
    expect(result.status).toBe('FAILED');
    const end = (await h.ledger.listAttemptEntries(h.key('deps'), { taskId: 'setup' })).at(-1)!.entry;
    expect(end).toMatchObject({ kind: 'end', outcome: 'infra', reason: 'sandbox failed: bwrap: cannot mount /proc' });
    expect(h.forge.updates.map((u) => u.setup).findLast((x) => x !== undefined)).toMatchObject({ status: 'failed', failure: 'sandbox failed: bwrap: cannot mount /proc' });
  });

  it('each run is the next setup attempt, which the logs call a run', async () => {
    const { h, opts } = timed(() => ({ ms: 1_000, result: { exitCode: 1, output: 'boom' } }));
    await h.run(SPEC, { ...opts, setup: ['make deps'] });
    await h.run(SPEC, { ...opts, setup: ['make deps'] });
    const entries = await h.ledger.listAttemptEntries(h.key('deps'), { taskId: 'setup' });
    expect([...new Set(entries.map((e) => e.attempt))]).toEqual([1, 2]);
    const text = renderAttemptEntries(entries);
    expect(text).toContain('── setup · run 1 ');
    expect(text).toContain('── setup · run 2 ');
    expect(text).not.toContain('attempt');
  });
});

describe('the setup step, with real processes', () => {
  it('a silent hang is killed at the stall bound, far before its timeout, and the goal escalates at once with the cause', async () => {
    const h = await goalHarness();
    const result = await h.run(SPEC, { setup: ['echo "Progress: resolved 442"; sleep 300'], setupNetwork: true, setupOptions: { stallS: 1, timeoutS: 600, unpassedHostNames: ['HTTPS_PROXY'] } });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation!.last_error).toMatch(
      /^setup `echo "Progress: resolved 442"; sleep 300` stalled \(no output, no file written and no CPU used for 1s\) and was killed:\nProgress: resolved 442\n/,
    );
    expect(result.escalation!.last_error).toContain('HTTPS_PROXY is set here but not passed to setup');
    const end = (await h.ledger.listAttemptEntries({ repo: h.repo.bare, goalId: 'deps' }, { taskId: 'setup' })).at(-1)!.entry;
    expect(end).toMatchObject({ kind: 'end', outcome: 'timeout' });
    expect(end.kind === 'end' && end.durationMs).toBeGreaterThanOrEqual(1000);
  });
});
