import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AttemptEntry } from '../../src/ports/attempt-log.js';
import type { AttemptRecord, GoalChange, GoalKey } from '../../src/ports/goal-ledger.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { ScriptedAgent } from '../helpers/scripted-agent.js';

const GOAL = {
  goal_id: 'steps',
  objective: 'two files',
  tasks: [
    { id: 'a', title: 'A', run: 'echo a > a.txt', verification: 'test -f a.txt' },
    { id: 'b', title: 'B', run: 'echo b > b.txt', verification: 'test -f b.txt', dependencies: ['a'] },
  ],
};

describe('the ledger: one transaction per step, the attempt record in it', () => {
  it("writes what each step's effects recorded in the step itself: no write of its own per entry or result", async () => {
    const h = await goalHarness();
    const writes = { steps: 0, entries: 0, results: 0, entriesInSteps: 0 };
    const ledger = h.ledger;
    const counting = Object.assign(Object.create(ledger) as typeof ledger, {
      recordChange: (key: GoalKey, change: GoalChange) => {
        writes.steps++;
        writes.entriesInSteps += change.attemptEntries?.length ?? 0;
        return ledger.recordChange(key, change);
      },
      appendAttemptEntry: (key: GoalKey, taskId: string, attempt: number, entry: AttemptEntry) => {
        writes.entries++;
        return ledger.appendAttemptEntry(key, taskId, attempt, entry);
      },
      recordAttempt: (key: GoalKey, a: AttemptRecord) => {
        writes.results++;
        return ledger.recordAttempt(key, a);
      },
    });
    const result = await h.run(GOAL, { ledger: counting });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(writes.entries).toBe(0);
    expect(writes.results).toBe(0);
    // Each task: its baseline, run step, verification, checkpoint and end, in that order.
    const kinds = (task: string) => ledger.listAttemptEntries({ repo: h.repo.bare, goalId: 'steps' }, { taskId: task }).then((e) => e.map((x) => x.entry.kind));
    expect(await kinds('a')).toEqual(['baseline', 'step', 'verify', 'checkpoint', 'end']);
    expect(await kinds('b')).toEqual(['baseline', 'step', 'verify', 'checkpoint', 'end']);
    expect(writes.entriesInSteps).toBe(10);
  });

  it('a model turn is written at once, after what waited for the step (shown live while the agent works)', async () => {
    const h = await goalHarness();
    const key = { repo: h.repo.bare, goalId: 'live' };
    const seen: string[][] = [];
    const agent = new ScriptedAgent(async ({ workspaceDir, onTurn }) => {
      await onTurn?.({ turn: 1, text: 'Writing the file.', tools: [] });
      seen.push((await h.ledger.listAttemptEntries(key, { taskId: 'a' })).map((e) => e.entry.kind));
      await writeFile(join(workspaceDir, 'a.txt'), 'a\n');
    });
    const result = await h.run({ goal_id: 'live', objective: 'o', tasks: [{ id: 'a', title: 'A', run: 'true', verification: 'test -f a.txt' }] }, { agent });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(seen).toEqual([['baseline', 'step', 'turn']]);
    expect((await h.ledger.listAttemptEntries(key, { taskId: 'a' })).map((e) => e.entry.kind)).toEqual(['baseline', 'step', 'turn', 'verify', 'checkpoint', 'end']);
  });
});
