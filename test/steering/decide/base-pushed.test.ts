import { describe, expect, it } from 'vitest';
import { parseRepoConfig } from '../../../src/config/repo-config.js';
import { decideBasePushed, goalName } from '../../../src/steering/decide/base-pushed.js';
import type { GoalEvent } from '../../../src/steering/events.js';
import { base, goal, ok } from './fixtures.js';

const pushed: Extract<GoalEvent, { type: 'base_pushed' }> = { ...base, type: 'base_pushed', branch: 'main', after: 'c'.repeat(40) };
const withPr = (state: Parameters<typeof goal>[0], meta = {}) => goal(state, { prNumber: 9, ...meta });
const scheduled = (facts: Parameters<typeof decideBasePushed>[1]) => decideBasePushed(pushed, facts).map((d) => d.actions.find((a) => a.type === 'schedule'));

describe('decideBasePushed: a push to the default branch', () => {
  it('a goal resting complete with an open PR runs again (its run follows the new tip)', () => {
    expect(scheduled({ goals: [withPr('LOOP_COMPLETE')], config: ok })).toEqual([{ type: 'schedule', mode: 'run', priority: 'P1' }]);
  });

  it('a goal running now is not interrupted: the move is recorded (a run that ends complete runs again), and a status turn queued behind it', () => {
    const g = withPr('EXECUTING');
    const [d] = decideBasePushed(pushed, { goals: [g], running: new Set([goalName(g)]), config: ok });
    expect(d!.actions.slice(1)).toEqual([
      { type: 'setMeta', patch: { baseMovedDuringRun: 'c'.repeat(40) } },
      // A status turn queued behind the run looks at the mark, should the run have ended before it was written.
      { type: 'schedule', mode: 'status', priority: 'P1' },
    ]);
  });

  it.each([
    ['escalated (a human holds it)', withPr('ESCALATED')],
    ['executing, but no worker runs it (a resume follows anyway)', withPr('EXECUTING')],
    ['merged', withPr('LOOP_COMPLETE', { merged: true })],
    ['no PR yet', goal('LOOP_COMPLETE')],
  ])('nothing for a goal %s', (_name, g) => {
    expect(decideBasePushed(pushed, { goals: [g], running: new Set(), config: ok })).toEqual([]);
  });

  it('nothing with follow_base: off, or an invalid config', () => {
    expect(decideBasePushed(pushed, { goals: [withPr('LOOP_COMPLETE')], config: { ok: true, config: parseRepoConfig({ follow_base: 'off' }) } })).toEqual([]);
    expect(decideBasePushed(pushed, { goals: [withPr('LOOP_COMPLETE')], config: { ok: false, problems: ['x'] } })).toEqual([]);
  });
});
