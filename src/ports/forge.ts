import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { Escalation } from '../goal/escalation.js';

/**
 * Where a goal is reported to people: the terminal for the CLI, the issue and pull request
 * for the GitHub App. Every method must be idempotent; the loop may repeat a call after a crash.
 */
export interface Forge {
  /** Progress changed (state, task, attempt, budget). Implementations may throttle. */
  update(snapshot: GoalSnapshot): Promise<void>;
  /** A task was verified and its checkpoint pushed. */
  checkpointed(snapshot: GoalSnapshot, checkpoint: { taskId: string; sha: string }): Promise<void>;
  /** The loop needs a human approval before it can continue. */
  requestApproval(snapshot: GoalSnapshot, taskIds: string[]): Promise<void>;
  /** A task ran out of retries: stop and ask for help. */
  escalate(snapshot: GoalSnapshot, escalation: Escalation): Promise<void>;
  /** The run ended (any status). */
  finished(result: LoopResult, snapshot: GoalSnapshot): Promise<void>;
}
