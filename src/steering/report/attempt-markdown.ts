import { duration, exitText } from '../../common/run-words.js';
import { utf8Bytes } from '../../common/untrusted.js';
import { spendText } from '../../goal/usage.js';
import type { AttemptEntry, BaselineEntry, EndEntry, TurnEntry } from '../../ports/attempt-log.js';
import { evidenceWords, GREEN_BEFORE, GREEN_BEFORE_WHY, greenBefore } from './evidence.js';
import { code, commitLink, fenced, htmlText, lastLines } from './inert.js';
import { type AttemptView, attemptFailed } from './record.js';
import { inlineUntrusted } from './status-comment.js';

/** Most of one attempt's block by default (UTF-8 bytes): turns in the middle are left out beyond it. */
const ATTEMPT_MAX_CHARS = 40_000;
const TURNS_KEPT_AT_START = 2;
const TOOL_CALLS_BRIEF = 30;

export interface RenderContext {
  repoUrl: string;
  goalId: string;
}

export const logsHint = (goalId: string) => `\`goal-loop logs ${goalId.replace(/[^\w.-]/g, '')}\``;

/** `<details>` of one attempt: every entry (`full`), or what was tried and what failed (`brief`). */
export function attemptDetails(v: AttemptView, ctx: RenderContext, detail: 'full' | 'brief', open = false, maxChars = ATTEMPT_MAX_CHARS): string {
  const body = detail === 'full' ? fullBody(v, ctx, maxChars) : briefBody(v, ctx);
  return `<details${open ? ' open' : ''}><summary>${summaryText(v)}</summary>\n\n${body}\n\n</details>`;
}

/** The attempt in one line (a list item), for when there is no room for more. */
export function attemptLine(v: AttemptView): string {
  return `- ${code(v.taskId, 64)} attempt ${v.attempt}: ${v.end ? endText(v.end) : 'running'}`;
}

function summaryText(v: AttemptView): string {
  const outcome = v.end ? v.end.outcome.replace('_', ' ') : attemptFailed(v) ? 'failed verification' : 'running';
  const reason = v.end && v.end.outcome !== 'passed' ? ` — ${htmlText(v.end.reason, 100)}` : '';
  return `<code>${htmlText(v.taskId, 64)}</code> attempt ${v.attempt}: ${htmlText(outcome)}${reason}`;
}

export function endText(e: EndEntry): string {
  return `${e.outcome.replace('_', ' ')} — ${inlineUntrusted(e.reason, 200)}${spendText(e.tokens, e.costUsd)} · ${duration(e.durationMs)}`;
}

/** How much of each entry is shown: `compact` when the attempt would not fit otherwise. */
interface Scale {
  tailLines: number;
  toolsPerTurn: number;
  textChars: number;
}
const NORMAL: Scale = { tailLines: 40, toolsPerTurn: 25, textChars: 300 };
const COMPACT: Scale = { tailLines: 15, toolsPerTurn: 4, textChars: 120 };

function turnBlock(t: TurnEntry, scale: Scale): string {
  const head = `**Turn ${t.turn}**${t.text.trim() ? ` — ${inlineUntrusted(t.text, scale.textChars)}` : ''}`;
  if (t.tools.length === 0) return head;
  const shown = t.tools.slice(0, scale.toolsPerTurn);
  const calls = shown.map((c) => `- ${c.isError ? '✘' : '↳'} ${code(c.name, 64)}${c.input ? ` ${code(c.input, 120)}` : ''}${c.result ? ` → ${code(c.result, scale === COMPACT ? 80 : 160)}` : ''}`);
  if (t.tools.length > shown.length) calls.push(`- … ${t.tools.length - shown.length} more tool call(s)`);
  return `${head}\n\n${calls.join('\n')}`;
}

function entryBlock(e: AttemptEntry, ctx: RenderContext, scale: Scale): string {
  switch (e.kind) {
    case 'step': {
      const ok = e.exitCode === 0 && !e.timedOut;
      const head = `**Run** ${code(e.command, 300)} · ${exitText(e.exitCode, e.timedOut, e.stalled === true)} · ${duration(e.durationMs)}`;
      return e.tail.trim() ? `${head}\n\n${fenced(lastLines(e.tail, ok ? 8 : scale.tailLines))}` : head;
    }
    case 'turn':
      return turnBlock(e, scale);
    case 'baseline': {
      const head = `**Baseline** (before the task's change) ${baselineOutcome(e)} ${code(e.command, 300)} · ${exitText(e.exitCode, e.timedOut)} · ${duration(e.durationMs)}${e.reused ? ' · the same verification on the same tree, not run again' : ''} — ${baselineMeaning(e)}`;
      // What failed before the change says whether the test fails for the task's reason.
      return !e.passed && e.tail.trim() ? `${head}\n\n${fenced(lastLines(e.tail, Math.min(8, scale.tailLines)))}` : head;
    }
    case 'verify': {
      const head = `**Verify** ${e.passed ? '✅' : '❌'} ${code(e.command, 300)} · ${exitText(e.exitCode, e.timedOut)} · ${duration(e.durationMs)}`;
      return e.tail.trim() ? `${head}\n\n${fenced(lastLines(e.tail, e.passed ? 8 : scale.tailLines))}` : head;
    }
    case 'checkpoint': {
      const w = evidenceWords(e.evidence);
      const head = `**Checkpoint** ${commitLink(e.sha, ctx.repoUrl)}${w ? ` · \`${w.short}\`: ${w.meaning}` : ''} · ${e.files} file(s), +${e.insertions} -${e.deletions}`;
      return e.stat.trim() ? `${head}\n\n${fenced(lastLines(e.stat, scale.tailLines))}` : head;
    }
    case 'end':
      return `**Ended:** ${endText(e)}`;
    case 'truncated':
      return `_${inlineUntrusted(e.dropped, 300)}_`;
  }
}

function baselineOutcome(e: BaselineEntry): string {
  return e.passed ? '🟢 passed' : '🔴 failed';
}

/** The baseline's outcome against what the task expects, in words (our own: nothing from the record is quoted). */
function baselineMeaning(e: BaselineEntry): string {
  if (greenBefore(e)) {
    return `⚠ ${GREEN_BEFORE}, ${GREEN_BEFORE_WHY}${e.policy === 'require_red' ? ' (`verification_baseline: require_red`: the task is not run)' : ''}`;
  }
  if (e.passed) return 'as expected (`expect: green`): the task must keep it passing';
  if (e.expect === 'green') return 'though the task expects it to pass (`expect: green`)';
  return 'as expected: the task must make it pass';
}

/**
 * Every entry, within `maxChars` UTF-8 bytes: turns from the middle are left out first (the first and the last
 * are kept), then each entry is shown more briefly.
 */
function fullBody(v: AttemptView, ctx: RenderContext, maxChars: number): string {
  let body = '';
  for (const scale of [NORMAL, COMPACT]) {
    body = withinTurns(v, ctx, scale, maxChars, scale === NORMAL ? TURNS_KEPT_AT_START : 1);
    if (utf8Bytes(body) <= maxChars) return body;
  }
  return body;
}

function withinTurns(v: AttemptView, ctx: RenderContext, scale: Scale, maxChars: number, keptAtStart: number): string {
  const blocks = v.entries.map((e) => {
    const text = entryBlock(e, ctx, scale);
    return { turn: e.kind === 'turn', text, bytes: utf8Bytes(text), keep: true };
  });
  let total = blocks.reduce((n, b) => n + b.bytes + 2, 0);
  const turns = blocks.filter((b) => b.turn);
  let left = 0;
  for (let i = keptAtStart; i < turns.length - 1 && total + 200 > maxChars; i++) {
    turns[i]!.keep = false;
    total -= turns[i]!.bytes + 2;
    left++;
  }
  const out: string[] = [];
  let noted = false;
  for (const b of blocks) {
    if (b.keep) out.push(b.text);
    else if (!noted) {
      out.push(`_… ${left} turn(s) left out here; every turn: ${logsHint(ctx.goalId)}_`);
      noted = true;
    }
  }
  return out.join('\n\n');
}

/** What was tried (run steps, tool calls), what failed (the verification's tail), why it ended. */
function briefBody(v: AttemptView, ctx: RenderContext): string {
  const out: string[] = [];
  const tried: string[] = [];
  let calls = 0;
  let lastWords = '';
  for (const e of v.entries) {
    if (e.kind === 'step') tried.push(`- ran ${code(e.command, 160)} → ${exitText(e.exitCode, e.timedOut, e.stalled === true)}`);
    if (e.kind === 'turn') {
      if (e.text.trim()) lastWords = e.text;
      for (const c of e.tools) {
        if (++calls > TOOL_CALLS_BRIEF) continue;
        tried.push(`- ${c.isError ? '✘' : '↳'} ${code(c.name, 64)}${c.input ? ` ${code(c.input, 100)}` : ''}${c.isError && c.result ? ` → ${code(c.result, 120)}` : ''}`);
      }
    }
  }
  if (calls > TOOL_CALLS_BRIEF) tried.push(`- … ${calls - TOOL_CALLS_BRIEF} more tool call(s): ${logsHint(ctx.goalId)}`);
  const baseline = v.entries.find((e): e is BaselineEntry => e.kind === 'baseline');
  if (baseline && (greenBefore(baseline) || (!baseline.passed && baseline.expect === 'green')))
    out.push(`**Baseline** (before the task's change) ${baselineOutcome(baseline)} ${code(baseline.command, 200)} — ${baselineMeaning(baseline)}`);
  out.push(tried.length > 0 ? `**What was tried**\n\n${tried.join('\n')}` : '_No run step or tool call was recorded._');
  if (lastWords) out.push(`**The agent's last words:** ${inlineUntrusted(lastWords, 300)}`);
  for (const e of v.entries) {
    if (e.kind === 'verify' && !e.passed) out.push(`**What failed:** ${code(e.command, 200)} · ${exitText(e.exitCode, e.timedOut)}\n\n${fenced(lastLines(e.tail, 30))}`);
    if (e.kind === 'step' && (e.exitCode !== 0 || e.timedOut))
      out.push(`**What failed:** ${code(e.command, 200)} · ${exitText(e.exitCode, e.timedOut, e.stalled === true)}\n\n${fenced(lastLines(e.tail, 30))}`);
    if (e.kind === 'truncated') out.push(`_${inlineUntrusted(e.dropped, 300)}_`);
  }
  if (v.end) out.push(`**Ended:** ${endText(v.end)}`);
  return out.join('\n\n');
}
