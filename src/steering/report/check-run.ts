import { utf8Bytes } from '../../common/untrusted.js';
import type { GoalSnapshot } from '../../goal/result.js';
import { type CheckAnnotation, parseAnnotations } from './annotations.js';
import { attemptDetails, attemptLine, endText, logsHint, type RenderContext } from './attempt-markdown.js';
import { evidenceLegend, evidenceMarkdown, GREEN_BEFORE_WHY } from './evidence.js';
import { fitBlocks, fitLines, SEPARATOR } from './fit.js';
import { code } from './inert.js';
import { type AttemptView, attemptFailed, failedVerifications, taskOrder, taskProofs } from './record.js';
import { escalatedAncestors } from './status-comment.js';

/** GitHub's limit for a check run's `output.summary` and `output.text`, in UTF-8 bytes. */
export const CHECK_OUTPUT_MAX = 65_535;
/** Task ids named in the summary's warning; the rest are counted. */
const WARNED_IDS_SHOWN = 20;

export interface CheckRunOutput {
  title: string;
  summary: string;
  text: string;
}

/**
 * The `goal-loop` check run's output: a line per task (its state, what its verification proves,
 * the attempts used and the last outcome), and a `<details>` per task and attempt with what it
 * did. Tasks whose verification passed before they ran are warned about at the top of the summary
 * (and in the title). Within GitHub's limits: older and passing attempts are shrunk to a line
 * first, then left out.
 */
export function renderCheckRun(s: GoalSnapshot, views: readonly AttemptView[], ctx: RenderContext): CheckRunOutput {
  const proofs = taskProofs(views, s);
  const warned = s.tasks.filter((t) => proofs.get(t.id)?.greenBefore);
  const doneWarned = warned.filter((t) => t.status === 'done').length;
  const title = `${s.tasks.filter((t) => t.status === 'done').length}/${s.tasks.length} tasks verified${doneWarned > 0 ? `, ⚠ ${doneWarned} passed before ${doneWarned > 1 ? 'they' : 'it'} ran` : ''}`;
  const blockers = escalatedAncestors(s.tasks);
  const last = lastByTask(views);
  const lines = taskOrder(views, s).map((id) => {
    const t = s.tasks.find((x) => x.id === id);
    const mine = views.filter((v) => v.taskId === id);
    const lastEnd = last.get(id)?.end;
    const outcome = mine.length > 0 ? ` · ${mine.length} attempt(s) recorded, last: ${lastEnd ? endText(lastEnd) : 'running'}` : '';
    if (!t) return `- ${mine.some(attemptFailed) && lastEnd?.outcome !== 'passed' ? '❌' : '✅'} ${code(id, 64)}${outcome}`;
    const blockedBy = t.status === 'pending' ? (blockers.get(t.id) ?? []) : [];
    const icon = t.status === 'done' ? '✅' : t.status === 'escalated' ? '❌' : t.status === 'skipped' ? '⏭️' : blockedBy.length > 0 ? '⛔' : '⏳';
    const evidence = evidenceMarkdown(proofs.get(t.id), t.status === 'done');
    return `- ${icon} \`${t.id}\` ${blockedBy.length > 0 ? `blocked by ${blockedBy.map((b) => `\`${b}\``).join(', ')}` : t.status}${t.attempts ? ` (attempt ${t.attempts})` : ''}${evidence ? ` · ${evidence}` : ''}${outcome}`;
  });
  const head: string[] = [];
  if (warned.length > 0) {
    const ids = warned.slice(0, WARNED_IDS_SHOWN).map((t) => `\`${t.id}\``);
    const more = warned.length > ids.length ? ` and ${warned.length - ids.length} more` : '';
    head.push(`> [!WARNING]\n> The verification of ${ids.join(', ')}${more} passed before the task ran, ${GREEN_BEFORE_WHY}: marked ⚠ below.`, '');
  }
  const legend = evidenceLegend(s.tasks.filter((t) => t.status === 'done').map((t) => proofs.get(t.id)?.evidence));
  const tail = legend ? ['', legend] : [];
  const room = CHECK_OUTPUT_MAX - 200 - utf8Bytes([...head, ...tail].join('\n'));
  const summary = [...head, ...fitLines(lines, room, (n) => `- … ${n} more task(s): ${logsHint(ctx.goalId)}`), ...tail].join('\n');
  return { title, summary, text: renderAttempts(s, views, ctx, CHECK_OUTPUT_MAX) };
}

/** Every attempt as a `<details>` block, within `budget` UTF-8 bytes. */
export function renderAttempts(s: GoalSnapshot, views: readonly AttemptView[], ctx: RenderContext, budget: number): string {
  if (views.length === 0) return '_No attempt has been recorded yet._';
  const head = `### Attempts\n\nEach task's attempts, oldest first: what ran, what the agent did, what verification said, and why the attempt ended.`;
  const order = taskOrder(views, s);
  const sorted = [...views].sort((a, b) => order.indexOf(a.taskId) - order.indexOf(b.taskId) || a.firstSeq - b.firstSeq);
  const last = lastByTask(views);
  // Room for each task's last attempt in full: its turns in the middle are left out beyond it.
  const perAttempt = Math.max(6_000, Math.min(40_000, Math.floor((budget - 4_000) / Math.max(1, last.size))));
  const maxSeq = Math.max(...views.map((x) => x.lastSeq));
  const blocks = sorted.map((v) => {
    const isLast = last.get(v.taskId) === v;
    const failed = attemptFailed(v);
    return {
      full: attemptDetails(v, ctx, 'full', isLast && failed, perAttempt),
      line: attemptLine(v),
      // The last attempt of each task first, failing ones before passing ones, then the most recent.
      importance: (isLast ? 2 : 0) + (failed ? 1 : 0) + v.lastSeq / (1 + maxSeq),
      protect: isLast,
    };
  });
  const omitted = (n: number) => `_${n} attempt(s) left out here for GitHub's size limit; the whole record: ${logsHint(ctx.goalId)}_`;
  return [head, ...fitBlocks(blocks, budget - utf8Bytes(head) - SEPARATOR.length - 16, omitted)].join(SEPARATOR);
}

function lastByTask(views: readonly AttemptView[]): Map<string, AttemptView> {
  const m = new Map<string, AttemptView>();
  for (const v of [...views].sort((a, b) => a.firstSeq - b.firstSeq)) m.set(v.taskId, v);
  return m;
}

/**
 * Annotations from the verification output of each task not verified (yet): its last attempt
 * that failed verification. A task that passed has nothing left to point at.
 */
export function checkAnnotations(s: GoalSnapshot, views: readonly AttemptView[], workspaceRoot?: string): CheckAnnotation[] {
  const done = new Set(s.tasks.filter((t) => t.status === 'done' || t.status === 'skipped').map((t) => t.id));
  const out: CheckAnnotation[] = [];
  const seen = new Set<string>();
  for (const id of taskOrder(views, s)) {
    if (done.has(id)) continue;
    const failing = views.filter((v) => v.taskId === id && failedVerifications(v).length > 0).at(-1);
    if (!failing) continue;
    for (const verify of failedVerifications(failing)) {
      for (const a of parseAnnotations(verify.tail, workspaceRoot ? { workspaceRoot } : {})) {
        const key = `${a.path}:${a.start_line}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push(a);
      }
    }
  }
  return out;
}
