import type { Logger } from 'pino';
import type { Escalation } from '../goal/escalation.js';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { Forge } from '../ports/forge.js';

/**
 * Where an externally driven goal is reported: nowhere but the log (stdout belongs to the MCP
 * protocol). It keeps the newest snapshot for `goal_status` and the resources.
 */
export class McpForge implements Forge {
  latest: GoalSnapshot | undefined;

  constructor(private readonly logger: Logger) {}

  async update(snapshot: GoalSnapshot): Promise<void> {
    this.latest = snapshot;
  }

  async checkpointed(snapshot: GoalSnapshot, checkpoint: { taskId: string; sha: string }): Promise<void> {
    this.latest = snapshot;
    this.logger.info({ goal: snapshot.goalId, task: checkpoint.taskId, sha: checkpoint.sha }, 'task verified and checkpointed');
  }

  async requestApproval(snapshot: GoalSnapshot, taskIds: string[]): Promise<void> {
    this.latest = snapshot;
    this.logger.warn({ goal: snapshot.goalId, tasks: taskIds }, 'waiting for a human approval');
  }

  async escalate(snapshot: GoalSnapshot, escalation: Escalation): Promise<void> {
    this.latest = snapshot;
    this.logger.warn({ goal: snapshot.goalId, task: escalation.task_id, attempts: escalation.attempts }, 'task escalated');
  }

  async finished(result: LoopResult, snapshot: GoalSnapshot): Promise<void> {
    this.latest = snapshot;
    this.logger.info({ goal: result.goal_id, status: result.status, stopReason: result.stop_reason }, 'run ended');
  }
}
