import type { Evidence } from '../../goal/evidence.js';
import type { GoalSnapshot } from '../../goal/result.js';
import type { AttemptEntry, AttemptLogEntry, BaselineEntry, CheckpointEntry, EndEntry, VerifyEntry } from '../../ports/attempt-log.js';
import { greenBefore, type TaskProof } from './evidence.js';

/** One attempt of one task, from the attempt record. */
export interface AttemptView {
  taskId: string;
  attempt: number;
  entries: AttemptEntry[];
  firstSeq: number;
  lastSeq: number;
  end?: EndEntry;
}

/**
 * The record's entries grouped by task and attempt, in the order the attempts started. An attempt
 * number seen again after its end (a retried goal starts counting anew) is a new attempt.
 */
export function groupAttempts(entries: readonly AttemptLogEntry[]): AttemptView[] {
  const open = new Map<string, AttemptView>();
  const out: AttemptView[] = [];
  for (const e of [...entries].sort((a, b) => a.seq - b.seq)) {
    const id = `${e.taskId}\u0000${e.attempt}`;
    let v = open.get(id);
    if (!v || v.end) {
      v = { taskId: e.taskId, attempt: e.attempt, entries: [], firstSeq: e.seq, lastSeq: e.seq };
      open.set(id, v);
      out.push(v);
    }
    v.entries.push(e.entry);
    v.lastSeq = e.seq;
    if (e.entry.kind === 'end') v.end = e.entry;
  }
  return out;
}

/** Task ids in the order to show them: setup, the spec's tasks, the final gate, then any other. */
export function taskOrder(views: readonly AttemptView[], s: GoalSnapshot): string[] {
  const inRecord = new Set(views.map((v) => v.taskId));
  const order = ['setup', ...s.tasks.map((t) => t.id), 'final-gate'];
  const known = new Set(order);
  return [...order.filter((id, i) => order.indexOf(id) === i && (inRecord.has(id) || s.tasks.some((t) => t.id === id))), ...[...inRecord].filter((id) => !known.has(id))];
}

/** Did this attempt fail (or end for any reason but passing)? One still running has not. */
export function attemptFailed(v: AttemptView): boolean {
  if (v.end) return v.end.outcome !== 'passed';
  return v.entries.some((e) => e.kind === 'verify' && !e.passed);
}

export function failedVerifications(v: AttemptView): VerifyEntry[] {
  return v.entries.filter((e): e is VerifyEntry => e.kind === 'verify' && !e.passed);
}

export function lastCheckpoint(views: readonly AttemptView[], taskId: string, sha?: string): CheckpointEntry | undefined {
  const all = views.filter((v) => v.taskId === taskId).flatMap((v) => v.entries.filter((e): e is CheckpointEntry => e.kind === 'checkpoint'));
  return (sha ? all.find((c) => c.sha === sha) : undefined) ?? all.at(-1);
}

/** What the task's last checkpoint (or the one at `sha`) says its verification proves. */
export function taskEvidence(views: readonly AttemptView[], taskId: string, sha?: string): Evidence | undefined {
  return lastCheckpoint(views, taskId, sha)?.evidence;
}

/** The task's last baseline: its verification before its change, the first entry of the attempt it preceded. */
export function baselineOf(views: readonly AttemptView[], taskId: string): BaselineEntry | undefined {
  return views
    .filter((v) => v.taskId === taskId)
    .flatMap((v) => v.entries.filter((e): e is BaselineEntry => e.kind === 'baseline'))
    .at(-1);
}

/** The task's evidence and baseline, and whether to warn that its verification passed before it ran. */
export function taskProof(views: readonly AttemptView[], taskId: string, sha?: string): TaskProof {
  const baseline = baselineOf(views, taskId);
  const evidence = taskEvidence(views, taskId, sha);
  return { ...(evidence ? { evidence } : {}), ...(baseline ? { baseline } : {}), greenBefore: greenBefore(baseline) };
}

/** Each task's proof, by task id: what the checklists show beside each task. */
export function taskProofs(views: readonly AttemptView[], s: GoalSnapshot): Map<string, TaskProof> {
  return new Map(s.tasks.map((t) => [t.id, taskProof(views, t.id, t.checkpointSha)]));
}

/** The paths of a checkpoint's diffstat (`path +a -d` or `path bin` per line). */
export function statPaths(stat: string): string[] {
  return stat
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => l.replace(/ (?:\+\d+ -\d+|bin)$/, ''));
}
