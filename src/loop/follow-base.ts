import type { GoalSpec } from '../goal/schema.js';
import type { CommandResult } from '../ports/sandbox.js';
import type { BaseFollowed, Checkpoint, PendingPush } from '../ports/workspace.js';
import { describeFailure } from './command-report.js';
import type { FollowedBase } from './loop-model.js';

export interface ReverifyDeps {
  spec: GoalSpec;
  /** Runs a task's verification in the sandbox, on the workspace as it is. */
  verify: (taskId: string, command: string, attempt: number) => Promise<CommandResult>;
  /** The branch without the replayed commit `sha` and those after it (Workspace.dropReplayedFrom). */
  dropFrom: (sha: string) => Promise<{ checkpoints: Checkpoint[]; push: PendingPush }>;
  timeoutS: number;
  signal: AbortSignal;
}

type Repair = FollowedBase['repairs'][number];

/**
 * After the goal branch was brought onto its moved base (and setup ran on the new tree): each
 * replayed task's verification again, on the tree as it is now. A task whose verification fails
 * there is taken off the branch with every commit after it (git stays the truth: a run that dies
 * now does those tasks again, and none is left counted done on a tree where it fails). What the
 * run's start is told: the branch's checkpoints, and the tasks to repair (the verification that
 * fails, the checkpoint that conflicts, those dropped after either), each with what its next
 * attempt is told.
 */
export async function reverifyReplayed(followed: BaseFollowed, deps: ReverifyDeps): Promise<{ followedBase: FollowedBase; checkpoints: Checkpoint[] }> {
  const onto = followed.onto.slice(0, 12);
  const base = { mode: followed.mode, onto: followed.onto, ...(followed.note ? { note: followed.note } : {}) };
  const conflict = followed.conflict;
  if (!followed.push) {
    // A person's commit conflicts (or would be left out): the branch stays where it was.
    const unrepairable = `The base branch moved (to ${onto}), and a commit on the goal branch that is no task's (${conflict?.sha.slice(0, 12) ?? '?'}) no longer applies to it, or would be left out of it. A person must rebase the goal branch, or set follow_base: off.\n\n${conflict?.detail ?? ''}`;
    return { followedBase: { ...base, replayed: 0, reverified: 0, repairs: [], unrepairable, kept: true }, checkpoints: followed.checkpoints };
  }
  const failures = new Map<string, string>();
  let reverified = 0;
  // A task checkpointed twice is verified once, on the tree as it is.
  for (const taskId of new Set(followed.replayed.map((r) => r.taskId))) {
    const task = deps.spec.tasks.find((t) => t.id === taskId);
    if (!task) continue;
    if (deps.signal.aborted) {
      failures.set(taskId, `The base branch moved (to ${onto}); the run stopped before this task's verification ran again on it. Do the task again on the tree as it is now.`);
      continue;
    }
    const attempt = followed.checkpoints.find((c) => c.taskId === taskId)?.attempt ?? 1;
    const result = await deps.verify(taskId, task.verification, attempt);
    if (result.exitCode === 0) {
      reverified++;
      continue;
    }
    failures.set(
      taskId,
      `The base branch moved (to ${onto}) and this task's checkpoint was replayed onto it, but its verification fails there now:\n\n${describeFailure(`verification \`${task.verification}\``, result, deps.timeoutS)}\n\nChange the code so that the verification passes on the new base.`,
    );
  }
  const repairs: Repair[] = [];
  let checkpoints = followed.checkpoints;
  let push: PendingPush = followed.push;
  let unrepairable: string | undefined;
  const cutAt = followed.commits.findIndex((c) => c.taskId !== undefined && failures.has(c.taskId));
  if (cutAt >= 0) {
    const cut = followed.commits.slice(cutAt);
    if (cut.some((c) => !c.taskId)) {
      unrepairable = `The base branch moved (to ${onto}); the verification of ${[...failures.keys()].join(', ')} fails on it, and a person's commit comes after that checkpoint on the goal branch: a person must decide. The first failure:\n\n${[...failures.values()][0]}`;
    } else {
      ({ checkpoints, push } = await deps.dropFrom(followed.commits[cutAt]!.sha));
      for (const [taskId, detail] of failures) repairs.push({ taskId, why: 'verification', detail });
      for (const c of cut) {
        if (c.taskId && !failures.has(c.taskId)) {
          repairs.push({
            taskId: c.taskId,
            why: 'dropped',
            detail: `The base branch moved (to ${onto}); this task's checkpoint came after one whose verification fails there now, so it was left out of the branch. Do the task again on the tree as it is now.`,
          });
        }
      }
    }
  }
  if (conflict?.taskId) repairs.push({ taskId: conflict.taskId, why: 'conflict', detail: `The base branch moved (to ${onto}). ${conflict.detail}` });
  for (const taskId of followed.dropped) {
    repairs.push({
      taskId,
      why: 'dropped',
      detail: `The base branch moved (to ${onto}); this task's checkpoint came after ${conflict?.taskId ?? 'a commit'} whose change no longer applies, so it was left out of the branch. Do the task again on the tree as it is now.`,
    });
  }
  // One repair per task, the first said (a failure or a conflict before a drop).
  const once = repairs.filter((r, i) => repairs.findIndex((x) => x.taskId === r.taskId) === i);
  return {
    followedBase: { ...base, replayed: followed.replayed.length, reverified, repairs: once, ...(unrepairable ? { unrepairable } : {}), push },
    checkpoints,
  };
}
