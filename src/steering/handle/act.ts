import type { Logger } from 'pino';
import type { GoalKey, GoalLedger } from '../../ports/goal-ledger.js';
import type { GoalMode } from '../../ports/queue.js';
import type { Action, EventDecision } from '../decide/actions.js';
import type { GoalEvent } from '../events.js';
import type { IssueForge } from '../issue-forge.js';
import { addPendingReview } from '../pending-reviews.js';
import { settleRestingControl } from './resting-control.js';

export interface ActDeps {
  ledger: GoalLedger;
  logger: Logger;
  /** Enqueues goal work (durably). */
  schedule: (key: GoalKey, mode: GoalMode, priority: string) => Promise<void>;
  /** True while a worker holds the goal's lease. */
  isRunning: (key: GoalKey) => Promise<boolean>;
  /** Drops a queued run that has not started yet. */
  cancel: (key: GoalKey) => Promise<void>;
}

/** Performs a decision's actions, in order; the first that fails stops the rest (the event is retried). */
export async function act(deps: ActDeps, forge: IssueForge, e: GoalEvent, decision: EventDecision): Promise<void> {
  for (const action of decision.actions) await perform(deps, forge, e, decision.key, action);
}

async function perform(deps: ActDeps, forge: IssueForge, e: GoalEvent, key: GoalKey | undefined, a: Action): Promise<void> {
  const { ledger } = deps;
  const goal = (): GoalKey => {
    if (!key) throw new Error(`action ${a.type} needs a goal, and the decision names none`);
    return key;
  };
  switch (a.type) {
    case 'comment':
      await forge.comment(a.issueNumber, a.body);
      return;
    case 'setDraft':
      await forge.setDraft(a.prNumber, a.draft);
      return;
    case 'react':
      if (e.type !== 'command') throw new Error(`a reaction needs a command's comment, not a ${e.type} event`);
      await forge.react(e.commentId, a.content).catch((err: unknown) => deps.logger.warn({ err }, 'reaction failed'));
      return;
    case 'log':
      deps.logger.info(a.data, a.msg);
      return;
    case 'upsertGoal':
      await ledger.upsertGoal(goal(), { spec: a.spec, branch: a.branch, ...(a.priority !== undefined ? { priority: a.priority } : {}) });
      return;
    case 'acceptPlan':
      if (await deps.isRunning(goal())) {
        await ledger.setMeta(goal(), { issuePlan: null });
        return;
      }
      if (a.spec) await ledger.upsertGoal(goal(), { spec: a.spec, branch: a.branch });
      await ledger.setMeta(goal(), { issuePlan: a.issuePlan });
      return;
    case 'setMeta':
      await ledger.setMeta(goal(), a.patch);
      return;
    case 'addPendingReview':
      await addPendingReview(ledger, goal(), a.review);
      return;
    case 'setControl':
      await ledger.setControl(goal(), a.control);
      return;
    case 'setState':
      await ledger.setState(goal(), a.state, a.event, a.detail, a.stopReason);
      return;
    case 'updateTask':
      await ledger.updateTask(goal(), a.taskId, a.patch);
      return;
    case 'schedule':
      await deps.schedule(goal(), a.mode, a.priority);
      return;
    case 'cancel':
      await deps.cancel(goal());
      return;
    case 'settleRestingIfIdle':
      // Asked now, not before: a loop that finished since the event arrived no longer runs it.
      if (!(await deps.isRunning(goal()))) await settleRestingControl(ledger, goal());
      return;
  }
}
