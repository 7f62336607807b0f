import { utf8Bytes } from '../common/untrusted.js';
import type { GoalSnapshot } from '../goal/result.js';
import { renderAttempts } from '../steering/report/check-run.js';
import { SEPARATOR } from '../steering/report/fit.js';
import { code } from '../steering/report/inert.js';
import { type AttemptView, taskProofs } from '../steering/report/record.js';
import { budgetLine, checklist, inlineUntrusted } from '../steering/report/status-comment.js';

/** GitHub's limit for one step's job summary (`GITHUB_STEP_SUMMARY`), in bytes: a bigger one is not shown. */
export const JOB_SUMMARY_MAX_BYTES = 1024 * 1024;
/** What the rendered summary may take: a margin under the limit for whatever else the step writes to it. */
export const JOB_SUMMARY_BUDGET_BYTES = 900 * 1024;

export interface JobSummaryContext {
  /** e.g. https://github.com/octo/repo */
  repoUrl: string;
  goalId: string;
  prUrl?: string;
  /** One line about this run, e.g. "Continued in a new run: time budget reached". */
  runNote?: string;
}

/**
 * The goal as a workflow user sees it in the job summary: objective, state, branch, PR, the
 * checklist (each done task with its evidence, each task whose verification passed before it ran
 * warned about), the budget, and every attempt from the attempt record (as the check run shows
 * them), within JOB_SUMMARY_BUDGET_BYTES. Untrusted text is made inert the way the status comment
 * and the check run make it.
 */
export function renderJobSummary(s: GoalSnapshot, views: readonly AttemptView[], ctx: JobSummaryContext): string {
  const links = [
    `**State:** \`${s.state}\``,
    /^\d+$/.test(ctx.goalId) ? `**Issue:** [#${ctx.goalId}](${ctx.repoUrl}/issues/${ctx.goalId})` : `**Goal:** ${code(ctx.goalId, 64)}`,
    `**Branch:** [${code(s.branch, 200)}](${ctx.repoUrl}/tree/${s.branch.split('/').map(encodeURIComponent).join('/')})`,
  ];
  const pr = prLink(ctx.prUrl);
  if (pr) links.push(`**PR:** ${pr}`);
  const head = [`## goal-loop: ${inlineUntrusted(s.objective, 200)}`];
  if (ctx.runNote?.trim()) head.push(`> ${inlineUntrusted(ctx.runNote, 300)}`);
  head.push(links.join(' · '));
  if (s.stopReason && s.state !== 'LOOP_COMPLETE') head.push(`> ${inlineUntrusted(s.stopReason, 300)}`);
  head.push(s.tasks.length > 0 ? checklist(s, { repoUrl: ctx.repoUrl }, taskProofs(views, s)) : '_Planning…_', budgetLine(s));
  const top = head.join(SEPARATOR);
  const attempts = renderAttempts(s, views, { repoUrl: ctx.repoUrl, goalId: ctx.goalId }, JOB_SUMMARY_BUDGET_BYTES - utf8Bytes(top) - SEPARATOR.length - 1);
  return `${top}${SEPARATOR}${attempts}\n`;
}

/** `[#12](url)` for a pull request's address, `[the pull request](url)` for another http(s) one, nothing for anything else. */
function prLink(url: string | undefined): string | undefined {
  if (!url) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return undefined;
  // The URL as the parser writes it: no space, parenthesis or angle bracket left to end the link early.
  const href = parsed.href.replace(/[()<>]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const n = parsed.pathname.match(/\/pull\/(\d+)\/?$/)?.[1];
  return `[${n ? `#${n}` : 'the pull request'}](${href})`;
}
