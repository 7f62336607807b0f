import { describe, expect, it } from 'vitest';
import type { GoalState } from '../../../src/goal/states.js';
import { restingSettlement } from '../../../src/steering/decide/resting.js';

describe('restingSettlement: a pause or stop on a goal no loop runs', () => {
  it.each<[GoalState, 'pause' | 'stop' | null, string | undefined, ReturnType<typeof restingSettlement>]>([
    ['EXECUTING', null, undefined, undefined],
    ['EXECUTING', 'pause', undefined, { state: 'PAUSED', event: 'pause', reason: 'paused by a human' }],
    ['EXECUTING', 'pause', 'the goal label was removed', { state: 'PAUSED', event: 'pause', reason: 'the goal label was removed' }],
    ['AWAITING_APPROVAL', 'pause', undefined, { state: 'PAUSED', event: 'pause', reason: 'paused by a human' }],
    ['ESCALATED', 'pause', undefined, { state: 'PAUSED', event: 'pause', reason: 'paused by a human' }],
    ['LOOP_COMPLETE', 'pause', undefined, undefined],
    ['PAUSED', 'pause', undefined, undefined],
    ['STOPPED', 'pause', undefined, undefined],
    ['EXECUTING', 'stop', undefined, { state: 'STOPPED', event: 'stop', reason: 'stopped by a human' }],
    ['PAUSED', 'stop', 'the issue was closed', { state: 'STOPPED', event: 'stop', reason: 'the issue was closed' }],
    ['LOOP_COMPLETE', 'stop', undefined, { state: 'STOPPED', event: 'stop', reason: 'stopped by a human' }],
    ['STOPPED', 'stop', undefined, undefined],
  ])('%s + %s (%s)', (state, control, controlReason, expected) => {
    expect(restingSettlement({ state, control, controlReason })).toEqual(expected);
  });
});
