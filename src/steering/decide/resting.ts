import { type GoalState, RESTING_STATES } from '../../goal/states.js';
import type { ControlRequest } from '../../ports/ledger.js';

/**
 * A human's pause or stop on a goal no loop is running: a stop ends any goal that is not stopped
 * yet; a pause holds one that is mid-way, or waiting for approval or help. The state it moves to
 * and why, or undefined when the request changes nothing.
 */
export function restingSettlement(goal: {
  state: GoalState;
  control: ControlRequest | null;
  controlReason?: string | undefined;
}): { state: 'PAUSED' | 'STOPPED'; event: ControlRequest; reason: string } | undefined {
  const request = goal.control;
  if (!request) return undefined;
  const applies = request === 'stop' ? goal.state !== 'STOPPED' : !RESTING_STATES.has(goal.state) || goal.state === 'AWAITING_APPROVAL' || goal.state === 'ESCALATED';
  if (!applies) return undefined;
  const reason = goal.controlReason ?? (request === 'pause' ? 'paused by a human' : 'stopped by a human');
  return { state: request === 'pause' ? 'PAUSED' : 'STOPPED', event: request, reason };
}
