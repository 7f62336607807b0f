import type { EventOf } from '../events.js';
import { goalKeyFor } from '../issue-goal.js';
import type { ConfigFact, EventDecision, GoalView } from './actions.js';
import { invalidConfigComment, pauseOrStop, refuseSender } from './common.js';
import { decideStart } from './start.js';

export interface LabelFacts {
  config: ConfigFact;
  /** The sender has write access; asked only when the config is valid and the label is the goal label. */
  maySteer?: boolean;
  /** The issue's goal in the ledger (looked up once the sender may steer). */
  goal?: GoalView | undefined;
  running?: boolean;
}

/** issues.labeled / unlabeled: the goal label starts the issue's goal; removing it pauses the goal. */
export function decideLabel(e: EventOf<'labeled' | 'unlabeled'>, facts: LabelFacts): EventDecision {
  if (!facts.config.ok) return { actions: [invalidConfigComment(facts.config, e.issue.number)] };
  if (e.label !== facts.config.config.label) return { actions: [] };
  if (!facts.maySteer) return { actions: refuseSender(e.sender, e.type, e.issue.number) };
  if (e.type === 'labeled') {
    const start = decideStart(e, { existing: facts.goal, running: facts.running ?? false });
    return 'refusal' in start ? { actions: [{ type: 'comment', issueNumber: e.issue.number, body: start.refusal }] } : start;
  }
  return { key: goalKeyFor(e.owner, e.repo, e.issue.number), actions: pauseOrStop(facts.goal, 'pause', 'the goal label was removed') };
}
