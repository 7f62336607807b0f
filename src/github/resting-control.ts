import { readCoreMeta } from '../goal/meta.js';
import type { GoalKey, Ledger } from '../ports/ledger.js';
import { restingSettlement } from './decide/resting.js';

/**
 * Applies a human's pause or stop to a goal that no loop is running (see restingSettlement). True
 * when the state changed. The request stays recorded, so a run queued before it is dropped.
 */
export async function settleRestingControl(ledger: Ledger, key: GoalKey): Promise<boolean> {
  const goal = await ledger.getGoal(key);
  if (!goal?.control) return false;
  const settled = restingSettlement({ state: goal.state, control: goal.control, controlReason: readCoreMeta(goal.meta).controlReason });
  if (!settled) return false;
  await ledger.setState(key, settled.state, settled.event, settled.reason, settled.reason);
  return true;
}
