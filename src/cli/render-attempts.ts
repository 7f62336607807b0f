import { plainText } from '../common/plain-text.js';
import { duration, exitText } from '../common/run-words.js';
import { spendText } from '../goal/usage.js';
import { FINAL_GATE_TASK, SETUP_TASK } from '../loop/loop-model.js';
import type { AttemptEntry, AttemptLogEntry, BaselineEntry } from '../ports/attempt-log.js';
import { evidenceWords, GREEN_BEFORE, GREEN_BEFORE_WHY, greenBefore } from '../steering/report/evidence.js';

/** Lines of an output's tail shown for a failed step or verification (the record keeps more; --json has it all). */
const TAIL_LINES = 15;
const PATHS_SHOWN = 5;

/**
 * The attempt record as terminal text: a header per task and attempt, then a line per entry.
 * Every string is untrusted (commands, output, the model's words): escape sequences and control
 * characters are removed before printing. `last` carries the open header across --follow batches.
 */
export function renderAttemptEntries(entries: readonly AttemptLogEntry[], last: { attempt?: string } = {}): string {
  const out: string[] = [];
  for (const e of entries) {
    const id = `${e.taskId}#${e.attempt}`;
    if (last.attempt !== id) {
      // Setup and the final gate run once per run: their record's attempt number counts the runs.
      const which = e.taskId === SETUP_TASK || e.taskId === FINAL_GATE_TASK ? `run ${e.attempt}` : `attempt ${e.attempt}`;
      out.push(`── ${safe(e.taskId)} · ${which} ${'─'.repeat(Math.max(3, 50 - e.taskId.length))}`);
      last.attempt = id;
    }
    out.push(...renderEntry(e.entry));
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

function renderEntry(e: AttemptEntry): string[] {
  switch (e.kind) {
    case 'step':
      return [`  $ ${oneLine(e.command)}  ${exitText(e.exitCode, e.timedOut, e.stalled === true)} · ${duration(e.durationMs)}`, ...(e.exitCode === 0 ? [] : indentTail(e.tail))];
    case 'turn':
      return [
        `  turn ${e.turn}${e.text.trim() ? `  ${oneLine(e.text, 110)}` : ''}`,
        ...e.tools.map((t) => `    ${t.isError ? '✘' : '↳'} ${safe(t.name)}${t.input ? ` ${oneLine(t.input, 80)}` : ''}${t.result ? ` → ${oneLine(t.result, 90)}` : ''}`),
      ];
    case 'baseline':
      return [
        `  ${baselineMark(e)} baseline (before the task's change) ${oneLine(e.command)}  ${e.passed ? 'passed' : 'failed'}, ${exitText(e.exitCode, e.timedOut)} · ${duration(e.durationMs)}${e.reused ? ' · same verification on the same tree, not run again' : ''}`,
        `    ${baselineMeaning(e)}`,
        // A failure nobody expected is explained by its output's end.
        ...(!e.passed && e.expect === 'green' ? indentTail(e.tail) : []),
      ];
    case 'verify':
      return [`  ${e.passed ? '✔' : '✘'} verify ${oneLine(e.command)}  ${exitText(e.exitCode, e.timedOut)} · ${duration(e.durationMs)}`, ...(e.passed ? [] : indentTail(e.tail))];
    case 'checkpoint': {
      const paths = e.stat.split('\n').filter(Boolean);
      return [
        `  ● checkpoint ${e.sha.slice(0, 12)}  ${e.files} file${e.files === 1 ? '' : 's'} +${e.insertions} -${e.deletions}${evidenceText(e.evidence)}`,
        ...paths.slice(0, PATHS_SHOWN).map((p) => `    ${safe(p)}`),
        ...(e.files > Math.min(paths.length, PATHS_SHOWN) ? [`    … ${e.files - Math.min(paths.length, PATHS_SHOWN)} more`] : []),
      ];
    }
    case 'end':
      return [`  = ${e.outcome.replace('_', ' ')}: ${oneLine(e.reason, 140)}${spendText(e.tokens, e.costUsd)} · ${duration(e.durationMs)}`];
    case 'truncated':
      return [`  … ${oneLine(e.dropped)}`];
  }
}

/** `○` the baseline is what the task expects; `!` it is not (a green before a task that expects red: the warning). */
function baselineMark(e: BaselineEntry): string {
  return e.passed === (e.expect === 'green') ? '○' : '!';
}

/** The baseline's outcome against what the task expects, in a newcomer's words. */
function baselineMeaning(e: BaselineEntry): string {
  if (greenBefore(e)) {
    return `warning: ${GREEN_BEFORE}, ${GREEN_BEFORE_WHY} (expect: red)${e.policy === 'require_red' ? '; verification_baseline: require_red, so the task is not run' : ''}`;
  }
  if (e.passed) return 'as expected (expect: green): the task must keep it passing';
  if (e.expect === 'green') return 'though the task expects it to pass (expect: green)';
  return 'as expected (expect: red): the task must make it pass';
}

/** What the checkpoint's verification proves: ` · red → green: …`; nothing in a record older than evidence. */
function evidenceText(evidence: unknown): string {
  const w = evidenceWords(evidence);
  return w ? ` · ${w.short}: ${w.meaning}` : '';
}

function indentTail(tail: string): string[] {
  const lines = safe(tail).trimEnd().split('\n');
  const shown = lines.slice(-TAIL_LINES);
  return [...(lines.length > shown.length ? ['    …'] : []), ...shown.map((l) => `    ${l}`)];
}

const safe = (s: string) => plainText(s);

function oneLine(s: string, max = 160): string {
  const line = safe(s).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
