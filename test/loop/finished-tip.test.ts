import { describe, expect, it } from 'vitest';
import { decide } from '../../src/loop/transition.js';
import { git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { stateOf, view } from '../helpers/spec-builders.js';

// A rerun of a finished goal with nothing changed does no setup and no final gate (issue 24);
// a new commit on the goal branch, or another check, runs the gate again.
const spec = {
  goal_id: 'rerun',
  objective: 'o',
  acceptance_criteria: [{ description: 'the file is there', check: 'test -f done.txt' }],
  tasks: [{ id: 'a', title: 'A', run: 'echo done > done.txt', verification: 'test -f done.txt' }],
};

describe('rerunning a finished goal', () => {
  it('does no setup and no final gate on the same tip; a human commit on the branch runs the gate again', async () => {
    const h = await goalHarness();
    const key = { repo: h.repo.bare, goalId: 'rerun' };
    const runsOf = async (taskId: string) => new Set((await h.ledger.listAttemptEntries(key, { taskId })).map((e) => e.attempt)).size;

    const first = await h.run(spec, { setup: ['echo installing'] });
    expect(first.status).toBe('LOOP_COMPLETE');
    expect([await runsOf('setup'), await runsOf('final-gate')]).toEqual([1, 1]);

    const second = await h.run(spec, { setup: ['echo installing'] });
    expect(second.status).toBe('LOOP_COMPLETE');
    expect(second.stop_reason).toBeNull();
    expect([await runsOf('setup'), await runsOf('final-gate')]).toEqual([1, 1]);

    // Another gate command is another gate.
    const third = await h.run(spec, { setup: ['echo installing'], gate: ['true'] });
    expect(third.status).toBe('LOOP_COMPLETE');
    expect([await runsOf('setup'), await runsOf('final-gate')]).toEqual([2, 2]);

    // A human pushes to the goal branch: the tip moved, so setup and the gate run again.
    const work = `${h.root}/human`;
    git(h.root, 'clone', '-q', '--branch', 'goal/rerun', h.repo.bare, work);
    git(work, '-c', 'user.name=h', '-c', 'user.email=h@x', 'commit', '-q', '--allow-empty', '-m', 'a human note');
    git(work, 'push', '-q', 'origin', 'HEAD:goal/rerun');
    const fourth = await h.run(spec, { setup: ['echo installing'], gate: ['true'] });
    expect(fourth.status).toBe('LOOP_COMPLETE');
    expect([await runsOf('setup'), await runsOf('final-gate')]).toEqual([3, 3]);
  });

  it('a gate that failed is run again on the next run, with setup', async () => {
    const h = await goalHarness();
    const key = { repo: h.repo.bare, goalId: 'rerun' };
    const failing = { ...spec, acceptance_criteria: [{ description: 'never', check: 'false' }] };
    expect((await h.run(failing, { setup: ['echo installing'] })).status).toBe('ESCALATED');
    expect((await h.run(failing, { setup: ['echo installing'] })).status).toBe('ESCALATED');
    const gateRuns = new Set((await h.ledger.listAttemptEntries(key, { taskId: 'final-gate' })).map((e) => e.attempt)).size;
    expect(gateRuns).toBe(2);
  });
});

describe('decide: a start whose gate already passed', () => {
  it('rests in LOOP_COMPLETE without a final gate when every task has its checkpoint, and runs the rest otherwise', () => {
    const state = stateOf([view('a'), view('b')]);
    const all = decide(state, {
      type: 'start',
      at: 1,
      checkpoints: [
        { taskId: 'a', sha: 'a'.repeat(40) },
        { taskId: 'b', sha: 'b'.repeat(40) },
      ],
      gatePassed: true,
    });
    expect(all.state.phase).toBe('LOOP_COMPLETE');
    expect(all.effects).toEqual([{ type: 'finish' }]);
    const without = decide(state, {
      type: 'start',
      at: 1,
      checkpoints: [
        { taskId: 'a', sha: 'a'.repeat(40) },
        { taskId: 'b', sha: 'b'.repeat(40) },
      ],
    });
    expect(without.effects).toEqual([{ type: 'final_gate' }]);
  });
});
