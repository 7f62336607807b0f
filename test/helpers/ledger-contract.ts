import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateGoalSpec } from '../../src/goal/parse.js';
import type { GoalSpec } from '../../src/goal/schema.js';
import type { GoalKey, Ledger } from '../../src/ports/ledger.js';
import { rawSpec, rawTask } from './spec-builders.js';

export const key: GoalKey = { repo: '/repos/app', goalId: 'add-slugify' };
export const spec = (ids = ['a', 'b', 'c'], extra: Record<string, unknown> = {}): GoalSpec =>
  validateGoalSpec(
    rawSpec(
      ids.map((id, i) => rawTask(id, i > 0 ? [ids[i - 1]!] : [])),
      { goal_id: key.goalId, ...extra },
    ),
  );

/**
 * The Ledger behaviour every store (SQLite, PostgreSQL) must share: goals, tasks, attempts,
 * events, counters, control and meta. `open` returns a fresh, empty ledger; `openAgain` another
 * connection to the same one. (The inbox and leases are in the store contract.)
 */
export function describeLedgerContract(name: string, open: () => Promise<Ledger>, openAgain: () => Promise<Ledger>): void {
  describe(`${name} ledger contract`, () => {
    let l: Ledger;
    const extra: Ledger[] = [];
    beforeEach(async () => {
      l = await open();
    });
    afterEach(async () => {
      for (const other of extra.splice(0)) await other.close();
      await l.close();
    });
    const second = async () => {
      const other = await openAgain();
      extra.push(other);
      return other;
    };

    describe('goals and tasks', () => {
      it('records a new goal with its spec, branch, state and zero counters', async () => {
        const s = spec(['a'], { constraints: ['keep it small'] });
        const g = await l.upsertGoal(key, { spec: s, branch: 'goal/add-slugify' });
        expect(g).toMatchObject({
          repo: key.repo,
          goalId: key.goalId,
          objective: s.objective,
          state: 'INITIALIZING',
          stopReason: null,
          branch: 'goal/add-slugify',
          priority: 'P2',
          control: null,
          meta: {},
          counters: { iterations: 0, errors: 0, errors_recovered: 0, tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 }, cost_usd: 0 },
        });
        expect(g.spec).toEqual(s);
        expect(Number.isNaN(Date.parse(g.createdAt))).toBe(false);
        expect(await l.getGoal(key)).toEqual(g);
      });

      it('lists the tasks in spec order, pending, with no attempts', async () => {
        await l.upsertGoal(key, { spec: spec(['z', 'y', 'x']), branch: 'b' });
        const tasks = await l.listTasks(key);
        expect(tasks.map((t) => t.taskId)).toEqual(['z', 'y', 'x']);
        expect(tasks.map((t) => t.position)).toEqual([0, 1, 2]);
        for (const t of tasks) expect(t).toMatchObject({ status: 'pending', attempts: 0, checkpointSha: null, lastError: null, approved: false });
        expect(tasks[0]!.title).toBe('Title of z');
      });

      it('an unknown goal is undefined to get, and an error to change', async () => {
        const unknown = { repo: 'x', goalId: 'y' };
        expect(await l.getGoal(unknown)).toBeUndefined();
        await expect(l.listTasks(unknown)).rejects.toThrow(/unknown goal/);
        await expect(l.setState(unknown, 'EXECUTING', 'start')).rejects.toThrow(/unknown goal/);
        await expect(l.addCounters(unknown, { iterations: 1 })).rejects.toThrow(/unknown goal/);
        await expect(l.updateTask(unknown, 'a', { status: 'done' })).rejects.toThrow(/unknown goal/);
        await expect(l.recordAttempt(unknown, { taskId: 'a', attempt: 1, phase: 'run', passed: true, exitCode: 0, output: '', durationMs: 1 })).rejects.toThrow(/unknown goal/);
        await expect(l.setControl(unknown, 'stop')).rejects.toThrow(/unknown goal/);
        await expect(l.setMeta(unknown, { a: 1 })).rejects.toThrow(/unknown goal/);
        await expect(l.listEvents(unknown)).rejects.toThrow(/unknown goal/);
        expect(await l.listGoals()).toEqual([]);
      });

      it('the same goal id in two repositories is two goals', async () => {
        const other = { repo: '/repos/other', goalId: key.goalId };
        await l.upsertGoal(key, { spec: spec(['a']), branch: 'b1' });
        await l.upsertGoal(other, { spec: spec(['p', 'q']), branch: 'b2' });
        await l.addCounters(other, { iterations: 3 });
        expect((await l.listTasks(key)).map((t) => t.taskId)).toEqual(['a']);
        expect((await l.listTasks(other)).map((t) => t.taskId)).toEqual(['p', 'q']);
        expect((await l.getGoal(key))!.counters.iterations).toBe(0);
        expect((await l.listGoals()).map((g) => g.repo).sort()).toEqual(['/repos/app', '/repos/other']);
      });

      it('lists goals most recently updated first', async () => {
        const other = { repo: '/repos/other', goalId: 'g2' };
        await l.upsertGoal(key, { spec: spec(['a']), branch: 'b1' });
        await l.upsertGoal(other, { spec: spec(['a']), branch: 'b2' });
        await new Promise((r) => setTimeout(r, 5));
        await l.setState(key, 'EXECUTING', 'start');
        expect((await l.listGoals()).map((g) => g.goalId)).toEqual([key.goalId, 'g2']);
      });

      it('lists only the goals outside the given states when asked', async () => {
        const other = { repo: '/repos/other', goalId: 'g2' };
        await l.upsertGoal(key, { spec: spec(['a']), branch: 'b1' });
        await l.upsertGoal(other, { spec: spec(['a']), branch: 'b2' });
        await l.setState(other, 'LOOP_COMPLETE', 'done');
        expect((await l.listGoals({ exceptStates: ['LOOP_COMPLETE', 'STOPPED'] })).map((g) => g.goalId)).toEqual([key.goalId]);
        expect(await l.listGoals({ exceptStates: [] })).toHaveLength(2);
      });

      it('upserting again refreshes the spec and keeps counters, history and task progress', async () => {
        await l.upsertGoal(key, { spec: spec(['a', 'b', 'c']), branch: 'goal/x', priority: 'P0' });
        await l.updateTask(key, 'a', { status: 'done', attempts: 2, checkpointSha: 'abc1234' });
        await l.addCounters(key, { iterations: 2, errors_recovered: 1 });
        await l.setState(key, 'ESCALATED', 'verified', 'b', 'task b failed');

        const next = spec(['b', 'a', 'd'], { objective: 'A new objective' });
        const g = await l.upsertGoal(key, { spec: next, branch: 'goal/x' });
        expect(g.objective).toBe('A new objective');
        expect(g.spec).toEqual(next);
        expect(g.counters).toMatchObject({ iterations: 2, errors_recovered: 1 });
        expect(g.priority).toBe('P0');
        expect(g.state).toBe('ESCALATED');

        const tasks = await l.listTasks(key);
        expect(tasks.map((t) => t.taskId)).toEqual(['b', 'a', 'd']);
        expect(tasks.find((t) => t.taskId === 'a')).toMatchObject({ status: 'done', attempts: 2, checkpointSha: 'abc1234' });
        expect(tasks.find((t) => t.taskId === 'd')).toMatchObject({ status: 'pending', attempts: 0 });
        expect((await l.listEvents(key)).length).toBe(1);
        expect((await l.upsertGoal(key, { spec: next, branch: 'goal/x', priority: 'P3' })).priority).toBe('P3');
      });

      it('updates a task field by field, and refuses an unknown task', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.updateTask(key, 'b', { status: 'running', attempts: 1 });
        await l.updateTask(key, 'b', { lastError: 'exit 1', approved: true });
        expect((await l.listTasks(key))[1]).toMatchObject({ taskId: 'b', status: 'running', attempts: 1, lastError: 'exit 1', approved: true });
        await l.updateTask(key, 'b', { status: 'done', checkpointSha: 'f00', lastError: null });
        expect((await l.listTasks(key))[1]).toMatchObject({ status: 'done', attempts: 1, checkpointSha: 'f00', lastError: null, approved: true });
        await l.updateTask(key, 'b', {});
        await expect(l.updateTask(key, 'nope', { status: 'done' })).rejects.toThrow(/nope/);
      });

      it('keeps only the head and tail of a long last error', async () => {
        await l.upsertGoal(key, { spec: spec(['a']), branch: 'b' });
        const long = `HEAD-${'x'.repeat(100_000)}-TAIL`;
        await l.updateTask(key, 'a', { lastError: long });
        const stored = (await l.listTasks(key))[0]!.lastError!;
        expect(stored.length).toBeLessThan(20_000);
        expect(stored.startsWith('HEAD-')).toBe(true);
        expect(stored.endsWith('-TAIL')).toBe(true);
      });
    });

    describe('states, attempts, counters, control, meta', () => {
      it('every state change is an event with from, to, event and detail; the stop reason follows the rules', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.setState(key, 'DECOMPOSING', 'start', 'spec loaded');
        await l.setState(key, 'EXECUTING', 'start');
        await l.setState(key, 'STOPPED', 'executed', null, 'cost_cap_usd reached');
        expect((await l.getGoal(key))!).toMatchObject({ state: 'STOPPED', stopReason: 'cost_cap_usd reached' });
        await l.setState(key, 'STOPPED', 'noop');
        expect((await l.getGoal(key))!.stopReason).toBe('cost_cap_usd reached');
        await l.setState(key, 'EXECUTING', 'start', null, null);
        expect((await l.getGoal(key))!.stopReason).toBeNull();

        const events = await l.listEvents(key);
        expect(events.map((e) => [e.from, e.to, e.event, e.detail])).toEqual([
          ['INITIALIZING', 'DECOMPOSING', 'start', 'spec loaded'],
          ['DECOMPOSING', 'EXECUTING', 'start', null],
          ['EXECUTING', 'STOPPED', 'executed', null],
          ['STOPPED', 'STOPPED', 'noop', null],
          ['STOPPED', 'EXECUTING', 'start', null],
        ]);
        expect(events.every((e) => !Number.isNaN(Date.parse(e.at)))).toBe(true);
        expect((await l.getGoal(key))!.updatedAt).toBe(events.at(-1)!.at);
      });

      it('records attempts with exit codes and output, in order, per task', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.recordAttempt(key, { taskId: 'a', attempt: 1, phase: 'verify', passed: false, exitCode: 1, output: 'expected 2', durationMs: 12, logPath: '/logs/a-1.log' });
        await l.recordAttempt(key, { taskId: 'b', attempt: 1, phase: 'run', passed: false, exitCode: null, output: 'killed', durationMs: 5 });
        await l.recordAttempt(key, { taskId: 'a', attempt: 2, phase: 'verify', passed: true, exitCode: 0, output: 'ok', durationMs: 9 });
        expect(await l.listAttempts(key, 'a')).toEqual([
          { taskId: 'a', attempt: 1, phase: 'verify', passed: false, exitCode: 1, output: 'expected 2', logPath: '/logs/a-1.log', durationMs: 12 },
          { taskId: 'a', attempt: 2, phase: 'verify', passed: true, exitCode: 0, output: 'ok', durationMs: 9 },
        ]);
        expect((await l.listAttempts(key)).map((a) => `${a.taskId}#${a.attempt}`)).toEqual(['a#1', 'b#1', 'a#2']);
        expect((await l.listAttempts(key, 'b'))[0]!.exitCode).toBeNull();
      });

      it('trims long attempt output, keeping its head and tail', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.recordAttempt(key, { taskId: 'a', attempt: 1, phase: 'verify', passed: false, exitCode: 2, output: `FIRST${'y'.repeat(1_000_000)}LAST`, durationMs: 1 });
        const [a] = await l.listAttempts(key, 'a');
        expect(a!.output.length).toBeLessThan(20_000);
        expect(a!.output.startsWith('FIRST')).toBe(true);
        expect(a!.output.endsWith('LAST')).toBe(true);
      });

      it('stores text with NUL characters (binary tool output) without failing', async () => {
        await l.upsertGoal(key, { spec: spec(['a']), branch: 'b' });
        await l.recordAttempt(key, { taskId: 'a', attempt: 1, phase: 'run', passed: false, exitCode: 1, output: 'before\0after', durationMs: 1 });
        await l.updateTask(key, 'a', { lastError: 'bad\0byte' });
        await l.setState(key, 'ESCALATED', 'verified', 'detail\0here', 'reason\0here');
        await l.setMeta(key, { title: 'nul\0title' });
        const [a] = await l.listAttempts(key, 'a');
        expect(a!.output).toMatch(/^before.after$/);
        expect((await l.listTasks(key))[0]!.lastError).toMatch(/^bad.byte$/);
        expect((await l.getGoal(key))!.meta.title).toMatch(/^nul.title$/);
      });

      it('adds to the counters and returns the totals', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.addCounters(key, { iterations: 2, errors: 1, tokens: { input: 100, output: 20 }, cost_usd: 0.25 });
        const totals = await l.addCounters(key, { iterations: 1, errors_recovered: 1, tokens: { input: 5, cache_read: 7, cache_write: 3 }, cost_usd: 0.5 });
        expect(totals).toEqual({
          iterations: 3,
          errors: 1,
          errors_recovered: 1,
          tokens: { input: 105, output: 20, cache_read: 7, cache_write: 3 },
          cost_usd: 0.75,
        });
        expect((await l.getGoal(key))!.counters).toEqual(totals);
      });

      it('counts every increment from concurrent connections', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        const others = [l, await second(), await second()];
        await Promise.all(others.flatMap((c) => Array.from({ length: 10 }, () => c.addCounters(key, { iterations: 1, tokens: { input: 2 } }))));
        expect((await l.getGoal(key))!.counters).toMatchObject({ iterations: 30, tokens: { input: 60 } });
      });

      it('holds a pause/stop request until it is cleared', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.setControl(key, 'pause');
        expect((await l.getGoal(key))!.control).toBe('pause');
        await l.setControl(key, 'stop');
        expect((await l.getGoal(key))!.control).toBe('stop');
        await l.setControl(key, null);
        expect((await l.getGoal(key))!.control).toBeNull();
      });

      it('merges meta shallowly; a key set to null is removed', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        expect(await l.setMeta(key, { issue: 7, comment: { id: 3 } })).toEqual({ issue: 7, comment: { id: 3 } });
        expect(await l.setMeta(key, { pr: 12, comment: { id: 4 }, gone: null })).toEqual({ issue: 7, comment: { id: 4 }, pr: 12 });
        expect(await l.setMeta(key, { issue: null })).toEqual({ comment: { id: 4 }, pr: 12 });
        expect((await l.getGoal(key))!.meta).toEqual({ comment: { id: 4 }, pr: 12 });
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        expect((await l.getGoal(key))!.meta).toEqual({ comment: { id: 4 }, pr: 12 });
      });

      it('keeps every key of concurrent meta patches from several connections', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        const conns = [l, await second(), await second()];
        await Promise.all(conns.flatMap((c, i) => Array.from({ length: 5 }, (_, n) => c.setMeta(key, { [`k${i}-${n}`]: n }))));
        expect(Object.keys((await l.getGoal(key))!.meta)).toHaveLength(15);
      });

      it('a second connection sees the writes (status while a run is going)', async () => {
        const reader = await second();
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.setState(key, 'EXECUTING', 'start');
        expect((await reader.getGoal(key))!.state).toBe('EXECUTING');
        await reader.setControl(key, 'stop');
        expect((await l.getGoal(key))!.control).toBe('stop');
      });
    });

    describe('the attempt record', () => {
      it('appends entries per task and attempt, in order, filtered, and after a seq (what --follow asks)', async () => {
        await l.upsertGoal(key, { spec: spec(['a', 'b']), branch: 'b' });
        const step = { kind: 'step', command: 'npm test', exitCode: 1, durationMs: 40, timedOut: false, tail: 'FAIL x.test.ts' } as const;
        await l.appendAttemptEntry(key, 'a', 1, step);
        await l.appendAttemptEntry(key, 'a', 1, { kind: 'turn', turn: 1, text: 'Reading the test.', tools: [{ name: 'read_file', input: 'x.test.ts', result: 'expect(…)', isError: false }] });
        await l.appendAttemptEntry(key, 'b', 1, step);
        await l.appendAttemptEntry(key, 'a', 2, { kind: 'end', outcome: 'passed', reason: 'verified', tokens: { input: 1, output: 2, cache_read: 0, cache_write: 0 }, costUsd: 0.01, durationMs: 900 });
        const all = await l.listAttemptEntries(key);
        expect(all.map((e) => [e.taskId, e.attempt, e.entry.kind])).toEqual([
          ['a', 1, 'step'],
          ['a', 1, 'turn'],
          ['b', 1, 'step'],
          ['a', 2, 'end'],
        ]);
        expect(all.map((e) => e.seq)).toEqual([...all.map((e) => e.seq)].sort((x, y) => x - y));
        expect(all[1]!.entry).toEqual({ kind: 'turn', turn: 1, text: 'Reading the test.', tools: [{ name: 'read_file', input: 'x.test.ts', result: 'expect(…)', isError: false }] });
        expect(Number.isNaN(Date.parse(all[0]!.at))).toBe(false);
        expect((await l.listAttemptEntries(key, { taskId: 'a' })).map((e) => e.attempt)).toEqual([1, 1, 2]);
        expect((await l.listAttemptEntries(key, { taskId: 'a', attempt: 1 })).map((e) => e.entry.kind)).toEqual(['step', 'turn']);
        expect((await l.listAttemptEntries(key, { afterSeq: all[1]!.seq })).map((e) => e.seq)).toEqual([all[2]!.seq, all[3]!.seq]);
        // Another connection (another worker, `goal-loop logs --follow`) reads the same record.
        expect(await (await second()).listAttemptEntries(key)).toEqual(all);
      });

      it("a step's attempt results and entries land in its transaction, in order, or not at all", async () => {
        await l.upsertGoal(key, { spec: spec(['a']), branch: 'b' });
        const verify = { kind: 'verify', command: 't', exitCode: 0, durationMs: 2, timedOut: false, passed: true, tail: 'ok' } as const;
        await l.recordChange(key, {
          transitions: [{ to: 'STATE_COMMIT', event: 'verified' }],
          attempts: [{ taskId: 'a', attempt: 1, phase: 'verify', passed: true, exitCode: 0, output: 'ok', durationMs: 2 }],
          attemptEntries: [
            { taskId: 'a', attempt: 1, entry: { kind: 'step', command: 'make', exitCode: 0, durationMs: 1, timedOut: false, tail: '' } },
            { taskId: 'a', attempt: 1, entry: verify },
          ],
        });
        expect((await l.listAttemptEntries(key)).map((e) => e.entry.kind)).toEqual(['step', 'verify']);
        expect((await l.listAttempts(key)).map((a) => a.phase)).toEqual(['verify']);
        // A step that cannot land (a task it patches does not exist) leaves no entry behind.
        await expect(
          l.recordChange(key, {
            tasks: [{ taskId: 'nope', patch: { status: 'done' } }],
            attemptEntries: [{ taskId: 'a', attempt: 2, entry: verify }],
            attempts: [{ taskId: 'a', attempt: 2, phase: 'verify', passed: true, exitCode: 0, output: '', durationMs: 1 }],
          }),
        ).rejects.toThrow();
        expect(await l.listAttemptEntries(key)).toHaveLength(2);
        expect(await l.listAttempts(key)).toHaveLength(1);
      });

      it('keeps untrusted text as data (NUL bytes, quotes, markup) and refuses an unknown goal', async () => {
        await l.upsertGoal(key, { spec: spec(['a']), branch: 'b' });
        await l.appendAttemptEntry(key, 'a', 1, { kind: 'step', command: "echo '\\0'; DROP TABLE goals; --", exitCode: 0, durationMs: 1, timedOut: false, tail: 'bin\0ary <script>' });
        const [e] = await l.listAttemptEntries(key);
        expect(e!.entry.kind === 'step' && e!.entry.tail).toMatch(/^bin.ary <script>$/);
        expect(e!.entry.kind === 'step' && e!.entry.command).toBe("echo '\\0'; DROP TABLE goals; --");
        await expect(l.appendAttemptEntry({ repo: 'r', goalId: 'nope' }, 'a', 1, { kind: 'truncated', dropped: 'x' })).rejects.toThrow(/unknown goal/);
        // Half an emoji (a cut in the wrong place) is stored, not refused.
        await l.appendAttemptEntry(key, 'a', 1, { kind: 'truncated', dropped: 'cut \ud83d' });
        expect((await l.listAttemptEntries(key)).at(-1)!.entry).toMatchObject({ kind: 'truncated', dropped: expect.stringMatching(/^cut .$/) });
      });
    });

    describe('one step in one write, and the outbox', () => {
      it('a change lands whole: transitions, tasks, counters and the effects it implies', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.recordChange(key, {
          transitions: [
            { to: 'STATE_COMMIT', event: 'verified', detail: 'a' },
            { to: 'LOOP_COMPLETE', event: 'checkpointed', detail: null, stopReason: 'all done' },
          ],
          tasks: [{ taskId: 'a', patch: { status: 'done', attempts: 1, checkpointSha: 'abc1234' } }],
          counters: { iterations: 2, errors_recovered: 1 },
          meta: { prNumber: 7, gone: null },
          effects: [
            { kind: 'checkpointed', payload: { taskId: 'a', sha: 'abc1234' } },
            { kind: 'finished', payload: { status: 'LOOP_COMPLETE' } },
          ],
        });
        expect(await l.getGoal(key)).toMatchObject({ state: 'LOOP_COMPLETE', stopReason: 'all done', counters: { iterations: 2, errors_recovered: 1 }, meta: { prNumber: 7 } });
        expect((await l.listTasks(key))[0]).toMatchObject({ status: 'done', attempts: 1, checkpointSha: 'abc1234' });
        expect((await l.listEvents(key)).map((e) => [e.from, e.to])).toEqual([
          ['INITIALIZING', 'STATE_COMMIT'],
          ['STATE_COMMIT', 'LOOP_COMPLETE'],
        ]);
        const pending = await l.pendingEffects({ key });
        expect(pending.map((e) => [e.kind, e.payload, e.attempts, e.lastError])).toEqual([
          ['checkpointed', { taskId: 'a', sha: 'abc1234' }, 0, null],
          ['finished', { status: 'LOOP_COMPLETE' }, 0, null],
        ]);
        expect(pending[0]!.key).toEqual(key);
        expect(pending[0]!.id).toBeLessThan(pending[1]!.id);
        expect(Number.isNaN(Date.parse(pending[0]!.createdAt))).toBe(false);
      });

      it('a change that fails part-way leaves nothing: no state, no task change, no effect', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await expect(
          l.recordChange(key, {
            transitions: [{ to: 'LOOP_COMPLETE', event: 'checkpointed', stopReason: 'done' }],
            meta: { templatePosted: true },
            tasks: [
              { taskId: 'a', patch: { status: 'done' } },
              { taskId: 'no-such-task', patch: { status: 'done' } },
            ],
            effects: [{ kind: 'finished', payload: {} }],
          }),
        ).rejects.toThrow(/no-such-task/);
        expect((await l.getGoal(key))!).toMatchObject({ state: 'INITIALIZING', meta: {} });
        expect((await l.listTasks(key))[0]!.status).toBe('pending');
        expect(await l.listEvents(key)).toEqual([]);
        expect(await l.pendingEffects()).toEqual([]);
        await expect(l.recordChange({ repo: key.repo, goalId: 'nope' }, { effects: [{ kind: 'x', payload: 1 }] })).rejects.toThrow(/unknown goal/);
      });

      it('an effect is claimed by one try at a time, counted, failed with a reason and a wait, and done once', async () => {
        const other = { repo: key.repo, goalId: 'other' };
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.upsertGoal(other, { spec: { ...spec(), goal_id: 'other' }, branch: 'b2' });
        await l.recordChange(key, { effects: [{ kind: 'one', payload: 1 }] });
        await l.recordChange(other, { effects: [{ kind: 'two', payload: 2 }] });
        const [one, two] = await l.pendingEffects();
        expect([one!.kind, two!.kind]).toEqual(['one', 'two']);
        expect((await l.pendingEffects({ key: other })).map((e) => e.kind)).toEqual(['two']);

        const l2 = await second();
        const claims = await Promise.all([l.claimEffect(one!.id, 'w1', 60_000), l2.claimEffect(one!.id, 'w2', 60_000)]);
        expect(claims.sort()).toEqual([0, 1]); // one try wins, and it is the first
        expect(await l.claimEffect(one!.id, 'w3', 60_000)).toBe(0);
        // Claimed: still pending, but not an orphan for a sweep.
        expect((await l.pendingEffects({ key })).map((e) => e.attempts)).toEqual([1]);
        expect((await l.pendingEffects({ settledForMs: 0 })).map((e) => e.kind)).toEqual(['two']);

        // A short claim runs out: the next try takes it, and is counted (the try's number says an earlier one may have done it).
        expect(await l.claimEffect(two!.id, 'w1', 1)).toBe(1);
        await new Promise((r) => setTimeout(r, 20));
        expect(await l.claimEffect(two!.id, 'w2', 60_000)).toBe(2);
        // The timed-out try failing late does not shorten the live try's claim.
        await l.failEffect(two!.id, 'w1', 'late failure', 0);
        expect(await l.claimEffect(two!.id, 'w3', 60_000)).toBe(0);
        await l.failEffect(two!.id, 'w2', 'GitHub said 502', 60_000);
        expect(await l.claimEffect(two!.id, 'w3', 60_000)).toBe(0); // waiting before a retry
        expect((await l.pendingEffects({ key: other }))[0]).toMatchObject({ attempts: 2, lastError: 'GitHub said 502' });
        await l.failEffect(two!.id, 'w2', 'again', 0);
        expect(await l.claimEffect(two!.id, 'w3', 60_000)).toBe(3);
        expect((await l.pendingEffects({ key: other }))[0]!.attempts).toBe(3);

        await l.completeEffect(one!.id);
        await l.completeEffect(two!.id);
        expect(await l.pendingEffects()).toEqual([]);
        expect(await l.claimEffect(one!.id, 'w4', 60_000)).toBe(0);
        await l.failEffect(one!.id, 'w1', 'late', 0); // a slow try failing after another finished changes nothing
        expect(await l.pendingEffects()).toEqual([]);
      });

      it('a try renews its own claim while it goes on: no other try takes the effect meanwhile; a lost or finished claim is not renewed', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.recordChange(key, { effects: [{ kind: 'one', payload: 1 }] });
        const [one] = await l.pendingEffects({ key });
        expect(await l.claimEffect(one!.id, 'w1', 30)).toBe(1);
        expect(await l.renewEffectClaim(one!.id, 'w2', 60_000)).toBe(false); // not its claim
        expect(await l.renewEffectClaim(one!.id, 'w1', 60_000)).toBe(true);
        await new Promise((r) => setTimeout(r, 60)); // past the first claim's time
        expect(await l.claimEffect(one!.id, 'w2', 60_000)).toBe(0); // renewed: still w1's
        expect(await l.renewEffectClaim(one!.id, 'w1', 1)).toBe(true);
        await new Promise((r) => setTimeout(r, 20));
        expect(await l.claimEffect(one!.id, 'w2', 60_000)).toBe(2); // ran out: w2's try now
        expect(await l.renewEffectClaim(one!.id, 'w1', 60_000)).toBe(false);
        await l.completeEffect(one!.id);
        expect(await l.renewEffectClaim(one!.id, 'w2', 60_000)).toBe(false);
      });

      it('an effect given up is no longer pending, is kept as given up with why, and prune leaves it; only its try gives it up', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.recordChange(key, {
          effects: [
            { kind: 'escalate', payload: { nonce: 'n0nce-n0nce' } },
            { kind: 'sync', payload: {} },
          ],
        });
        const [lost, kept] = await l.pendingEffects({ key });
        expect(await l.claimEffect(lost!.id, 'w1', 60_000)).toBe(1);
        await l.giveUpEffect(lost!.id, 'w2', 'not this try'); // a try no longer holding it changes nothing
        expect((await l.pendingEffects({ key })).map((e) => e.kind)).toEqual(['escalate', 'sync']);
        await l.giveUpEffect(lost!.id, 'w1', 'given up after 1 tries: 502');
        expect((await l.pendingEffects({ key })).map((e) => e.id)).toEqual([kept!.id]);
        expect(await l.claimEffect(lost!.id, 'w3', 60_000)).toBe(0);
        const given = await l.givenUpEffects({ key });
        expect(given).toEqual([expect.objectContaining({ id: lost!.id, kind: 'escalate', payload: { nonce: 'n0nce-n0nce' }, attempts: 1, lastError: 'given up after 1 tries: 502' })]);
        expect(Number.isNaN(Date.parse(given[0]!.givenUpAt))).toBe(false);
        expect(await l.givenUpEffects({ key: { repo: key.repo, goalId: 'other' } })).toEqual([]);
        await l.completeEffect(kept!.id);
        await new Promise((r) => setTimeout(r, 20));
        expect((await l.prune({ expiredLeasesMs: 0, handledDeliveriesMs: 1 })).effects).toBe(1); // the done one only
        expect((await l.givenUpEffects()).map((e) => e.id)).toEqual([lost!.id]);
      });

      it('updateMeta: changes computed from the meta, made at once on two connections, lose nothing', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        const l2 = await second();
        const append = (x: Ledger, n: number) => x.updateMeta(key, (m) => ({ seen: [...((m.seen as number[] | undefined) ?? []), n], [`k${n}`]: null }));
        await Promise.all(Array.from({ length: 10 }, (_, n) => append(n % 2 ? l : l2, n)));
        const seen = (await l.getGoal(key))!.meta.seen as number[];
        expect([...seen].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        await expect(l.updateMeta({ repo: key.repo, goalId: 'nope' }, () => ({}))).rejects.toThrow(/unknown goal/);
      });

      it('a sweep sees only effects recorded long enough ago', async () => {
        await l.upsertGoal(key, { spec: spec(), branch: 'b' });
        await l.recordChange(key, { effects: [{ kind: 'fresh', payload: null }] });
        expect(await l.pendingEffects({ settledForMs: 60_000 })).toEqual([]);
        expect((await l.pendingEffects({ settledForMs: 0 })).map((e) => e.kind)).toEqual(['fresh']);
      });
    });

    it('reopening keeps goals, tasks, attempts, events and counters', async () => {
      await l.upsertGoal(key, { spec: spec(), branch: 'goal/add-slugify' });
      await l.updateTask(key, 'a', { status: 'done', attempts: 1, checkpointSha: 'deadbee' });
      await l.recordAttempt(key, { taskId: 'a', attempt: 1, phase: 'verify', passed: true, exitCode: 0, output: 'ok', durationMs: 3 });
      await l.setState(key, 'ESCALATED', 'verified', 'b', 'task b failed after 3 attempt(s)');
      await l.addCounters(key, { iterations: 4, cost_usd: 1.5 });
      await l.setMeta(key, { issue: 1 });
      const snapshot = async (x: Ledger) => ({ goal: await x.getGoal(key), tasks: await x.listTasks(key), attempts: await x.listAttempts(key), events: await x.listEvents(key) });
      const before = await snapshot(l);

      await l.close();
      l = await openAgain();
      expect(await snapshot(l)).toEqual(before);
      expect(before.goal).toMatchObject({ state: 'ESCALATED', stopReason: 'task b failed after 3 attempt(s)', meta: { issue: 1 } });
    });
  });
}
