import { readCoreMeta } from '../../goal/meta.js';
import type { GoalKey, GoalLedger } from '../../ports/goal-ledger.js';
import { restingSettlement } from '../decide/resting.js';
import { SYNC } from '../effects.js';

/**
 * Applies a human's pause or stop to a goal that no loop is running (see restingSettlement). True
 * when the state changed. The request stays recorded, so a run queued before it is dropped. The
 * label and status comment follow from the outbox (`sync`), written with the state.
 */
export async function settleRestingControl(ledger: Pick<GoalLedger, 'getGoal' | 'recordChange'>, key: GoalKey): Promise<boolean> {
  const goal = await ledger.getGoal(key);
  if (!goal?.control) return false;
  const settled = restingSettlement({ state: goal.state, control: goal.control, controlReason: readCoreMeta(goal.meta).controlReason });
  if (!settled) return false;
  await ledger.recordChange(key, { transitions: [{ to: settled.state, event: settled.event, detail: settled.reason, stopReason: settled.reason }], effects: [SYNC] });
  return true;
}
