import { tailChars, utf8Bytes } from '../../common/untrusted.js';
import type { Escalation } from '../../goal/escalation.js';
import { MISSING_SETUP_HINT_HEAD } from '../../goal/failure-summary.js';
import type { GoalSnapshot } from '../../goal/result.js';
import { attemptDetails, attemptLine, logsHint, type RenderContext } from './attempt-markdown.js';
import { fitBlocks, SEPARATOR } from './fit.js';
import { code, fenced } from './inert.js';
import type { AttemptView } from './record.js';
import { ESCALATION_MARKER, unlinked } from './status-comment.js';

/** GitHub's limit for a comment's body, in UTF-8 bytes. */
export const COMMENT_MAX = 65_536;
/** Room kept for what the forge adds (the effect marker). */
const RESERVED = 256;
/** Task ids named in one list of the comment's fixed part; the rest are counted. */
const IDS_SHOWN = 20;

/** Up to IDS_SHOWN items, then how many more: the fixed part of the comment stays small however many tasks there are. */
function bounded(items: readonly string[]): string {
  const shown = items.slice(0, IDS_SHOWN).join(', ');
  return items.length > IDS_SHOWN ? `${shown} … and ${items.length - IDS_SHOWN} more` : shown;
}

export interface EscalationContext extends RenderContext {
  /** Who is asked for help (`@login` each). */
  mention: string;
}

/**
 * The escalation comment: who is asked, what is stopped, the last verification output, each
 * attempt of the escalated task(s) (what was tried, what failed), and how to go on. At most
 * COMMENT_MAX bytes: older attempts are shrunk to a line first, then left out.
 */
export function renderEscalation(s: GoalSnapshot, e: Escalation, views: readonly AttemptView[], ctx: EscalationContext): string {
  const escalated = [e.task_id, ...(e.also_escalated ?? [])];
  const ids = (list: readonly string[]) => bounded(list.map((id) => code(id, 64)));
  const tried = s.tasks.find((t) => t.id === e.task_id);
  const also = (e.also_escalated ?? []).map((id) => {
    const t = s.tasks.find((x) => x.id === id);
    return `${code(id, 64)}${t?.attempts ? ` (attempt ${t.attempts})` : ''}`;
  });
  const went = (e.done_meanwhile?.length ?? 0) > 0 || (e.also_escalated?.length ?? 0) > 0;
  const skippable = escalated.filter((id) => id !== 'final-gate' && id !== 'setup');
  const tail = tailChars(e.last_error.trim().split('\n').slice(-40).join('\n'), 6000);
  const before = [
    ESCALATION_MARKER,
    `### goal-loop needs help with ${ids(escalated)}`,
    `${ctx.mention} the task ${tried ? `**${unlinked(tried.id)}** ` : ''}${whatHappened(e)}; ` +
      (went ? 'the goal went on with the tasks that do not depend on it, and is now ' : 'the goal is ') +
      `stopped at the last checkpoint on \`${s.branch}\`.`,
    `<details><summary>${e.cause === 'passes_before' ? 'Why it did not run' : 'Last verification output'}</summary>\n\n${fenced(tail)}\n\n</details>`,
    e.cause === 'passes_before'
      ? 'What was tried: nothing. Its verification passed on the tree without its change, so passing it could not show the task did anything (`verification_baseline: require_red`). Fix the spec (a verification that fails today, or `expect: green` for a refactor), then `/goal retry`.'
      : `What was tried: ${e.attempts} attempt(s), each rolled back to the last checkpoint and retried with the previous failure fed back${e.cause === 'no_progress' ? '; the last ones failed identically, so the loop stopped early rather than pay for the same failure again' : ''}.`,
  ];
  const after = [
    ...(also.length > 0 ? [`Also escalated: ${bounded(also)}.`] : []),
    ...(e.done_meanwhile?.length ? [`Done meanwhile (verified and checkpointed): ${ids(e.done_meanwhile)}.`] : []),
    ...(e.blocked?.length ? [`Still blocked (not run: they depend on an escalated task): ${ids(e.blocked)}.`] : []),
    ...(e.last_error.includes(MISSING_SETUP_HINT_HEAD)
      ? ['No `setup` ran, so the dependencies were never installed: add the `setup` the hint in the output shows to `.github/goal-loop.yml` on the default branch, then comment `/goal retry`.']
      : []),
    'To continue: push a fix to the goal branch and comment `/goal resume`, or comment `/goal retry` to try again with fresh retries' +
      (skippable.length > 0 ? `, or ${bounded(skippable.map((id) => code(`/goal skip ${id}`, 80)))} to go on without ${skippable.length > 1 ? 'them' : 'it'}.` : '.'),
  ];
  const mine = views.filter((v) => escalated.includes(v.taskId)).sort((a, b) => escalated.indexOf(a.taskId) - escalated.indexOf(b.taskId) || a.firstSeq - b.firstSeq);
  const fixed = utf8Bytes([...before, ...after].join(SEPARATOR)) + SEPARATOR.length * 2;
  const attempts =
    mine.length > 0
      ? [
          '#### Each attempt',
          ...fitBlocks(
            mine.map((v, i) => ({ full: attemptDetails(v, ctx, 'brief'), line: attemptLine(v), importance: i, protect: v === mine.filter((x) => x.taskId === v.taskId).at(-1) })),
            COMMENT_MAX - RESERVED - fixed - 40,
            (n) => `_${n} attempt(s) left out here for GitHub's size limit; the whole record: ${logsHint(ctx.goalId)}_`,
          ),
        ]
      : [];
  return [...before, ...attempts, ...after].join(SEPARATOR);
}

/** The escalated task's fate, by why it escalated. */
function whatHappened(e: Escalation): string {
  if (e.cause === 'passes_before') return 'did not run: its verification already passes before the task';
  if (e.cause === 'no_progress') return `made no progress: its last verification failures were identical (${e.attempts} attempt(s))`;
  return `failed after ${e.attempts} attempt(s)`;
}
