import type { BaseFollowedReport } from '../../src/goal/base-followed.js';
import type { Escalation } from '../../src/goal/escalation.js';
import type { GoalSnapshot, LoopResult } from '../../src/goal/result.js';
import type { Forge } from '../../src/ports/forge.js';

/** A Forge that remembers every call, for assertions. */
export class RecordingForge implements Forge {
  readonly updates: GoalSnapshot[] = [];
  readonly checkpoints: Array<{ taskId: string; sha: string }> = [];
  readonly approvals: string[][] = [];
  readonly escalations: Escalation[] = [];
  readonly results: LoopResult[] = [];
  readonly basesFollowed: BaseFollowedReport[] = [];
  /** Called on each update; the loop waits for what it returns. */
  onUpdate?: (s: GoalSnapshot) => void | Promise<void>;

  async update(s: GoalSnapshot): Promise<void> {
    this.updates.push(s);
    await this.onUpdate?.(s);
  }
  async checkpointed(_s: GoalSnapshot, c: { taskId: string; sha: string }): Promise<void> {
    this.checkpoints.push(c);
  }
  async baseFollowed(_s: GoalSnapshot, r: BaseFollowedReport): Promise<void> {
    this.basesFollowed.push(r);
  }
  async requestApproval(_s: GoalSnapshot, taskIds: string[]): Promise<void> {
    this.approvals.push(taskIds);
  }
  async escalate(_s: GoalSnapshot, e: Escalation): Promise<void> {
    this.escalations.push(e);
  }
  async finished(r: LoopResult): Promise<void> {
    this.results.push(r);
  }
  /** The states the goal went through, without repeats. */
  states(): string[] {
    return this.updates.map((u) => u.state).filter((s, i, all) => s !== all[i - 1]);
  }
}
