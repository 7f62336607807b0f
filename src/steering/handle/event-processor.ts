import type { EventDecision } from '../decide/actions.js';
import { decideBasePushed } from '../decide/base-pushed.js';
import { decideCommand } from '../decide/command.js';
import { decideHeadChecked } from '../decide/head-checked.js';
import { decideIssueClosed } from '../decide/issue-closed.js';
import { decideLabel } from '../decide/label.js';
import { decidePrClosed } from '../decide/pr-closed.js';
import { decideReview } from '../decide/review.js';
import type { GoalEvent } from '../events.js';
import type { IssueForge, IssueForgeFor } from '../issue-forge.js';
import { type ActDeps, act } from './act.js';
import { gatherBasePushed, gatherCommand, gatherHeadChecked, gatherIssueClosed, gatherLabel, gatherPrClosed, gatherReview } from './gather.js';

/** What act.ts needs, which covers what gather.ts needs (GatherDeps). */
export interface EventProcessorDeps extends ActDeps {
  /** The forge of the event's repository (the wiring authenticates it). */
  forgeFor: IssueForgeFor;
}

/**
 * Acts on a steering event in three steps: gather the facts (who may steer, the repo config, the
 * goal's record; I/O through the IssueForge port and the ledger), decide (pure: decide/), act
 * (ledger, queue, forge). Events are not ordered here: the wiring hands a repository's events
 * over one at a time, oldest first (the App's intake does so under the repository's lease), so
 * two commands on one goal never interleave.
 */
export class EventProcessor {
  constructor(private readonly deps: EventProcessorDeps) {}

  /** Handles one event; rejects when handling it failed (the wiring may retry it). */
  async handle(e: GoalEvent): Promise<void> {
    const forge = await this.deps.forgeFor(e);
    // One event about many goals: each goal's decision is acted on in turn.
    if (e.type === 'base_pushed') {
      for (const decision of decideBasePushed(e, await gatherBasePushed(this.deps, forge, e))) await act(this.deps, forge, e, decision);
      return;
    }
    await act(this.deps, forge, e, await this.decide(forge, e));
  }

  private async decide(forge: IssueForge, e: Exclude<GoalEvent, { type: 'base_pushed' }>): Promise<EventDecision> {
    const d = this.deps;
    switch (e.type) {
      case 'labeled':
      case 'unlabeled':
        return decideLabel(e, await gatherLabel(d, forge, e));
      case 'issue_closed':
        return decideIssueClosed(e, await gatherIssueClosed(d, forge, e));
      case 'pr_closed':
        return decidePrClosed(e, await gatherPrClosed(d, e));
      case 'command':
        return decideCommand(e, await gatherCommand(d, forge, e));
      case 'review':
        return decideReview(e, await gatherReview(d, forge, e));
      case 'head_checked':
        return decideHeadChecked(e, await gatherHeadChecked(d, forge, e));
    }
  }
}
