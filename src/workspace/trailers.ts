import { inertLine, unlinked, unmentioned } from '../common/inert-text.js';
import { plainText } from '../common/plain-text.js';
import { sanitizeCode } from '../common/untrusted.js';
import { EVIDENCE, type Evidence } from '../goal/evidence.js';
import type { Checkpoint, CheckpointInput } from '../ports/workspace.js';

export const TRAILER_GOAL_ID = 'Goal-Id';
export const TRAILER_TASK = 'Goal-Task';
export const TRAILER_ATTEMPT = 'Goal-Attempt';
/** What the checkpoint's verification proves (DESIGN.md §10). */
export const TRAILER_VERIFIED = 'Goal-Verified';

/** Room for a title in a subject: git and GitHub show about a line of it; the rest is cut. */
export const SUBJECT_TITLE_MAX = 200;

/**
 * `<task-id>: <title>`, an optional body, then the trailers. The title and body are untrusted: a
 * commit reaching the default branch would close the issues its message references and ping who
 * it mentions, so both are made inert; the subject is one line, so it can never hold a trailer.
 */
export function checkpointMessage(input: CheckpointInput): string {
  const subject = `${input.taskId}: ${inertLine(input.title, SUBJECT_TITLE_MAX)}`;
  const text = input.body ? inertBody(input.body) : '';
  const body = text ? `\n\n${text}` : '';
  const verified = input.evidence ? `${TRAILER_VERIFIED}: ${input.evidence}\n` : '';
  return `${subject}${body}\n\n${TRAILER_GOAL_ID}: ${input.goalId}\n${TRAILER_TASK}: ${input.taskId}\n${TRAILER_ATTEMPT}: ${input.attempt}\n${verified}`;
}

/** A message body: its lines kept, with no control character, reference or mention left. */
function inertBody(body: string): string {
  return unmentioned(unlinked(sanitizeCode(plainText(body)))).trim();
}

const SEP = '\x1f';
/** `git log` format that prints one record per commit: sha, goal id, task, attempt, evidence. */
export const CHECKPOINT_LOG_FORMAT = `${[
  '%H',
  `%(trailers:key=${TRAILER_GOAL_ID},valueonly,separator=%x2C)`,
  `%(trailers:key=${TRAILER_TASK},valueonly,separator=%x2C)`,
  `%(trailers:key=${TRAILER_ATTEMPT},valueonly,separator=%x2C)`,
  `%(trailers:key=${TRAILER_VERIFIED},valueonly,separator=%x2C)`,
].join('%x1f')}%x1e`;

/**
 * Checkpoints of one goal from `git log --format=CHECKPOINT_LOG_FORMAT` (newest first), oldest
 * first. A task checkpointed more than once (repaired after its base moved, say) counts by its
 * newest commit, in that commit's place: the branch's tip is then the last checkpoint's.
 */
export function parseCheckpointLog(log: string, goalId: string): Checkpoint[] {
  const out: Checkpoint[] = [];
  const seen = new Set<string>();
  for (const record of log.split('\x1e')) {
    const [sha, gid, task, attempt, verified] = record.trim().split(SEP);
    if (!sha || !task || gid?.trim() !== goalId) continue;
    const taskId = task.trim();
    if (seen.has(taskId)) continue;
    seen.add(taskId);
    const n = Number.parseInt(attempt ?? '', 10);
    const evidence = asEvidence(verified);
    out.push({ taskId, sha, ...(Number.isFinite(n) ? { attempt: n } : {}), ...(evidence ? { evidence } : {}) });
  }
  return out.reverse();
}

/** A trailer value is only evidence when it is one of the known ones: anything else (forged, repeated) is none. */
function asEvidence(value: string | undefined): Evidence | undefined {
  const v = value?.trim();
  return EVIDENCE.find((e) => e === v);
}
