import type { Checkpoint, CheckpointInput } from '../ports/workspace.js';

export const TRAILER_GOAL_ID = 'Goal-Id';
export const TRAILER_TASK = 'Goal-Task';
export const TRAILER_ATTEMPT = 'Goal-Attempt';

/** `<task-id>: <title>`, an optional body, then the trailers. */
export function checkpointMessage(input: CheckpointInput): string {
  const subject = `${input.taskId}: ${input.title}`.replace(/\s*\n\s*/g, ' ');
  const body = input.body?.trim() ? `\n\n${input.body.trim()}` : '';
  return `${subject}${body}\n\n${TRAILER_GOAL_ID}: ${input.goalId}\n${TRAILER_TASK}: ${input.taskId}\n${TRAILER_ATTEMPT}: ${input.attempt}\n`;
}

const SEP = '\x1f';
/** `git log` format that prints one record per commit: sha, goal id, task, attempt. */
export const CHECKPOINT_LOG_FORMAT = [
  '%H',
  `%(trailers:key=${TRAILER_GOAL_ID},valueonly,separator=%x2C)`,
  `%(trailers:key=${TRAILER_TASK},valueonly,separator=%x2C)`,
  `%(trailers:key=${TRAILER_ATTEMPT},valueonly,separator=%x2C)`,
].join('%x1f') + '%x1e';

/** Checkpoints of one goal from `git log --format=CHECKPOINT_LOG_FORMAT`, oldest first. */
export function parseCheckpointLog(log: string, goalId: string): Checkpoint[] {
  const out: Checkpoint[] = [];
  const seen = new Set<string>();
  for (const record of log.split('\x1e').reverse()) {
    const [sha, gid, task, attempt] = record.trim().split(SEP);
    if (!sha || !task || gid?.trim() !== goalId) continue;
    const taskId = task.trim();
    if (seen.has(taskId)) continue;
    seen.add(taskId);
    const n = Number.parseInt(attempt ?? '', 10);
    out.push({ taskId, sha, ...(Number.isFinite(n) ? { attempt: n } : {}) });
  }
  return out;
}
