import type { BaseFollowedReport } from '../goal/base-followed.js';
import type { Escalation } from '../goal/escalation.js';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';

/**
 * Which outbox effect a call performs: `id` is unique to it, and `retry` says an earlier try may
 * have done it already (then a comment is looked for by a marker holding `id` before it is posted).
 */
export interface EffectOnce {
  id: string;
  retry: boolean;
}

/**
 * Where a goal is reported to people: the terminal for the CLI, the issue and pull request
 * for the GitHub App. Every method must be idempotent: all but `update` are outbox effects
 * (loop/outbox.ts), repeated after a crash until one try completes.
 */
export interface Forge {
  /** Progress changed (state, task, attempt, budget). Implementations may throttle. */
  update(snapshot: GoalSnapshot): Promise<void>;
  /** A task was verified and its checkpoint pushed. */
  checkpointed(snapshot: GoalSnapshot, checkpoint: { taskId: string; sha: string }, once?: EffectOnce): Promise<void>;
  /** The goal branch was brought onto its moved base branch, and pushed (optional: the status shows it too). */
  baseFollowed?(snapshot: GoalSnapshot, report: BaseFollowedReport, once?: EffectOnce): Promise<void>;
  /** The loop needs a human approval before it can continue. */
  requestApproval(snapshot: GoalSnapshot, taskIds: string[], once?: EffectOnce): Promise<void>;
  /** A task ran out of retries: stop and ask for help. */
  escalate(snapshot: GoalSnapshot, escalation: Escalation, once?: EffectOnce): Promise<void>;
  /** The run ended (any status). */
  finished(result: LoopResult, snapshot: GoalSnapshot, once?: EffectOnce): Promise<void>;
}
