import type { GoalSpec } from '../goal/schema.js';
import type { CommandResult } from '../ports/sandbox.js';
import type { BaseFollowed } from '../ports/workspace.js';
import { describeFailure } from './command-report.js';
import type { FollowedBase } from './loop-model.js';

export interface ReverifyDeps {
  spec: GoalSpec;
  /** Runs a task's verification in the sandbox, on the workspace as it is. */
  verify: (taskId: string, command: string, attempt: number) => Promise<CommandResult>;
  timeoutS: number;
  signal: AbortSignal;
}

/**
 * After the goal branch was brought onto its moved base (and setup ran on the new tree): each
 * replayed checkpoint's verification again, on the tree as it is now. What the run's start is
 * told: the tasks to repair (a verification that fails now, the checkpoint that conflicts, those
 * dropped after it), each with what its next attempt is told.
 */
export async function reverifyReplayed(followed: BaseFollowed, deps: ReverifyDeps): Promise<FollowedBase> {
  const onto = followed.onto.slice(0, 12);
  const repairs: FollowedBase['repairs'] = [];
  let reverified = 0;
  for (const { taskId } of followed.replayed) {
    const task = deps.spec.tasks.find((t) => t.id === taskId);
    if (!task || deps.signal.aborted) continue;
    const attempt = followed.checkpoints.find((c) => c.taskId === taskId)?.attempt ?? 1;
    const result = await deps.verify(taskId, task.verification, attempt);
    if (result.exitCode === 0) {
      reverified++;
      continue;
    }
    repairs.push({
      taskId,
      why: 'verification',
      detail: `The base branch moved (to ${onto}) and this task's checkpoint was replayed onto it, but its verification fails there now:\n\n${describeFailure(`verification \`${task.verification}\``, result, deps.timeoutS)}\n\nChange the code so that the verification passes on the new base.`,
    });
  }
  const conflict = followed.conflict;
  if (conflict?.taskId) repairs.push({ taskId: conflict.taskId, why: 'conflict', detail: `The base branch moved (to ${onto}). ${conflict.detail}` });
  for (const taskId of followed.dropped) {
    repairs.push({
      taskId,
      why: 'dropped',
      detail: `The base branch moved (to ${onto}); this task's checkpoint came after ${conflict?.taskId ?? 'a commit'} whose change no longer applies, so it was left out of the branch. Do the task again on the tree as it is now.`,
    });
  }
  return {
    mode: followed.mode,
    onto: followed.onto,
    replayed: followed.replayed.length,
    reverified,
    repairs,
    ...(followed.note ? { note: followed.note } : {}),
    ...(conflict && !conflict.taskId
      ? {
          unrepairable: `The base branch moved (to ${onto}), and a commit on the goal branch that is no task's (${conflict.sha.slice(0, 12)}) no longer applies to it. A person must rebase the goal branch, or set follow_base: off.\n\n${conflict.detail}`,
        }
      : {}),
    push: followed.push,
  };
}
