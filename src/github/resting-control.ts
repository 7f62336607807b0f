import { RESTING_STATES } from '../goal/states.js';
import type { GoalKey, Ledger } from '../ports/ledger.js';

/**
 * Applies a human's pause or stop to a goal that no loop is running: a stop ends any goal that
 * is not stopped yet; a pause holds one that is mid-way, or waiting for approval or help. True
 * when the state changed. The request stays recorded, so a run queued before it is dropped.
 */
export async function settleRestingControl(ledger: Ledger, key: GoalKey): Promise<boolean> {
  const goal = await ledger.getGoal(key);
  if (!goal?.control) return false;
  const request = goal.control;
  const applies =
    request === 'stop' ? goal.state !== 'STOPPED' : !RESTING_STATES.has(goal.state) || goal.state === 'AWAITING_APPROVAL' || goal.state === 'ESCALATED';
  if (!applies) return false;
  const reason = typeof goal.meta.controlReason === 'string' ? goal.meta.controlReason : request === 'pause' ? 'paused by a human' : 'stopped by a human';
  await ledger.setState(key, request === 'pause' ? 'PAUSED' : 'STOPPED', request, reason, reason);
  return true;
}
