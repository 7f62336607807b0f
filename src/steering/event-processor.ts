import type { Octokit } from '../github/github-forge.js';
import { act, type ActDeps } from './act.js';
import type { Decision } from './decide/actions.js';
import { decideCommand } from './decide/command.js';
import { decideIssueClosed } from './decide/issue-closed.js';
import { decideLabel } from './decide/label.js';
import { decidePrClosed } from './decide/pr-closed.js';
import { decideReview } from './decide/review.js';
import type { GoalEvent } from './events.js';
import { gatherCommand, gatherIssueClosed, gatherLabel, gatherPrClosed, gatherReview } from './gather.js';

export interface EventProcessorDeps extends ActDeps {
  auth: (installationId: number) => Promise<Octokit>;
}

/**
 * Acts on webhook events in the worker, in three steps: gather the facts (who may steer, the repo
 * config, the goal's record; I/O), decide (pure: decide/), act (ledger, queue, GitHub). Events are
 * not ordered here: intake.ts handles a repository's events one at a time, oldest first, under
 * the repository's lease, so two commands on one goal never interleave.
 */
export class EventProcessor {
  constructor(private readonly deps: EventProcessorDeps) {}

  /** Handles one event; rejects when handling it failed (the inbox keeps it for a retry). */
  async handle(e: GoalEvent): Promise<void> {
    const o = await this.deps.auth(e.installationId);
    await act(this.deps, o, e, await this.decide(o, e));
  }

  private async decide(o: Octokit, e: GoalEvent): Promise<Decision> {
    const d = this.deps;
    switch (e.type) {
      case 'labeled':
      case 'unlabeled':
        return decideLabel(e, await gatherLabel(d, o, e));
      case 'issue_closed':
        return decideIssueClosed(e, await gatherIssueClosed(d, o, e));
      case 'pr_closed':
        return decidePrClosed(e, await gatherPrClosed(d, e));
      case 'command':
        return decideCommand(e, await gatherCommand(d, o, e));
      case 'review':
        return decideReview(e, await gatherReview(d, o, e));
    }
  }
}
