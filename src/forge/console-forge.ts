import { styleText } from 'node:util';
import { createLogUpdate } from 'log-update';
import { plainText } from '../common/plain-text.js';
import { type BaseFollowedReport, describeBaseFollowed } from '../goal/base-followed.js';
import type { Escalation } from '../goal/escalation.js';
import { MISSING_SETUP_HINT_HEAD, summarizeFailure } from '../goal/failure-summary.js';
import type { GoalSnapshot, LoopResult, SetupProgress, TaskSnapshot } from '../goal/result.js';
import type { TaskStatus } from '../goal/states.js';
import type { Forge } from '../ports/forge.js';

type Style = Parameters<typeof styleText>[0];

const ICON: Record<TaskStatus, [string, Style]> = {
  pending: ['○', 'gray'],
  running: ['◐', 'cyan'],
  done: ['✔', 'green'],
  skipped: ['↷', 'gray'],
  escalated: ['✖', 'red'],
  awaiting_approval: ['⏸', 'yellow'],
};

export interface ConsoleForgeOptions {
  stream?: NodeJS.WriteStream;
  /** Redraw in place (a TTY); otherwise print one line per change. */
  live?: boolean;
  /** Colours; default: when the stream supports them. */
  color?: boolean;
  clock?: () => number;
}

/** The CLI's forge: a live task list on stderr (or plain lines when not a terminal). */
/** The last lines of an escalation's failure the console shows. */
const EXCERPT_LINES = 15;

export class ConsoleForge implements Forge {
  private readonly stream: NodeJS.WriteStream;
  private readonly live: boolean;
  private readonly color: boolean;
  private readonly clock: () => number;
  private readonly draw?: ReturnType<typeof createLogUpdate>;
  private last?: GoalSnapshot;
  private ticker?: NodeJS.Timeout;
  private readonly lastLines = new Map<string, string>();
  private readonly lastErrors = new Map<string, string>();
  private lastSetup = '';

  constructor(opts: ConsoleForgeOptions = {}) {
    this.stream = opts.stream ?? process.stderr;
    this.live = opts.live ?? Boolean(this.stream.isTTY);
    this.color = opts.color ?? (typeof this.stream.hasColors === 'function' && this.stream.hasColors());
    this.clock = opts.clock ?? Date.now;
    if (this.live) this.draw = createLogUpdate(this.stream);
  }

  async update(s: GoalSnapshot): Promise<void> {
    this.last = s;
    if (this.live) {
      this.redraw();
      if (!this.ticker) {
        this.ticker = setInterval(() => this.redraw(), 250);
        this.ticker.unref();
      }
      return;
    }
    // Plain mode: one line whenever setup's command or status changes, or a task's status or attempt.
    if (s.setup) {
      const key = `${s.setup.status}:${s.setup.command ?? ''}`;
      if (key !== this.lastSetup) this.stream.write(`${this.setupLine(s.setup)}\n`);
      this.lastSetup = key;
    }
    for (const t of s.tasks) {
      const line = `${t.status}:${t.attempts}`;
      if (this.lastLines.get(t.id) === line) continue;
      this.lastLines.set(t.id, line);
      if (t.status !== 'pending' || t.attempts > 0) this.stream.write(`${this.taskLine(t)}\n`);
      if (t.lastError && this.lastErrors.get(t.id) !== t.lastError) this.stream.write(`  ${this.failureLine(t, 2)}\n`);
      this.lastErrors.set(t.id, t.lastError ?? '');
    }
  }

  async checkpointed(): Promise<void> {
    // Checkpoints show up in the task lines; nothing else to print.
  }

  async baseFollowed(_s: GoalSnapshot, report: BaseFollowedReport): Promise<void> {
    this.println(`${this.paint(report.repairs.length > 0 ? 'yellow' : 'green', 'base followed')}: ${describeBaseFollowed(report)}`);
  }

  async requestApproval(s: GoalSnapshot, taskIds: string[]): Promise<void> {
    this.println(
      `${this.paint('yellow', 'approval needed')}: ${taskIds.join(', ')} (risk above max_risk ${s.limits.max_risk}, or requires_approval). Re-run with --approve ${taskIds[0]} to continue.`,
    );
  }

  async escalate(s: GoalSnapshot, e: Escalation): Promise<void> {
    const lines = e.last_error.trim().split('\n');
    const excerpt = lines.slice(-EXCERPT_LINES).join('\n');
    // A long output's last lines may not hold what failed (a TAP footer, a summary): the one line
    // the live list showed comes first then.
    const inShort = lines.length > EXCERPT_LINES ? ` ${summarizeFailure(e.last_error, 160)}` : '';
    const why = (id: string) => {
      const error = s.tasks.find((t) => t.id === id)?.lastError;
      return error ? `${id} (${summarizeFailure(error, 140)})` : id;
    };
    this.println(
      `${this.paint('red', 'escalated')}: ${escalationHeadline(e)}\n` +
        `${e.cause === 'passes_before' ? 'Why' : 'Last failure'}:${inShort}\n${indent(excerpt)}\n` +
        (e.also_escalated?.length ? `Also escalated: ${e.also_escalated.map(why).join('; ')}.\n` : '') +
        (e.done_meanwhile?.length ? `Done meanwhile (verified and checkpointed): ${e.done_meanwhile.join(', ')}.\n` : '') +
        (e.blocked?.length ? `Still blocked (they depend on an escalated task): ${e.blocked.join(', ')}.\n` : '') +
        (e.last_error.includes(MISSING_SETUP_HINT_HEAD)
          ? 'Add the setup to the repo config (see the hint), then run the same command again to resume with fresh retries.'
          : e.task_id === 'setup'
            ? `Fix the setup in the repo config (.github/goal-loop.yml on the base branch, or --config)${e.last_error.includes('\nhint: ') ? ', as the hint says' : ''}, then run the same command again.`
            : 'Fix it on the goal branch (push to it), then run the same command again to resume with fresh retries.'),
    );
  }

  async finished(r: LoopResult, s: GoalSnapshot): Promise<void> {
    this.last = s;
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    if (this.live) {
      this.redraw();
      this.draw?.done();
    } else {
      // The last step's changes (a task that escalated as the goal came to rest) get their line too.
      for (const t of s.tasks) {
        const line = `${t.status}:${t.attempts}`;
        if (this.lastLines.get(t.id) === line || (t.status === 'pending' && t.attempts === 0)) continue;
        this.lastLines.set(t.id, line);
        this.stream.write(`${this.taskLine(t)}\n`);
      }
    }
    const colour: Style = r.success ? 'green' : r.status === 'ESCALATED' || r.status === 'FAILED' ? 'red' : 'yellow';
    const budget = `${r.iterations} iteration(s), ${r.tokens.input + r.tokens.output} tokens, $${r.cost_usd.toFixed(2)}`;
    this.stream.write(
      `${this.paint(colour, r.status)} ${r.tasks_completed}/${r.tasks_total} tasks, ${budget}, ${r.duration_s.toFixed(1)}s${r.stop_reason ? ` — ${r.stop_reason}` : ''}\nbranch: ${r.branch}\n`,
    );
  }

  private println(text: string): void {
    if (this.live && this.draw) {
      this.draw.clear();
      this.stream.write(`${text}\n`);
      this.redraw();
    } else {
      this.stream.write(`${text}\n`);
    }
  }

  private redraw(): void {
    const s = this.last;
    if (!s || !this.draw) return;
    const head = `${this.paint('bold', s.goalId)}  ${s.state}  ${this.paint('gray', `iter ${s.iterations}/${s.limits.max_iterations}  $${s.costUsd.toFixed(2)}/${s.limits.cost_cap_usd}`)}`;
    const setup = s.setup ? [this.setupLine(s.setup)] : [];
    const lines = s.tasks.flatMap((t) => (t.lastError && t.status !== 'done' ? [this.taskLine(t), `    ${this.failureLine(t, 4)}`] : [this.taskLine(t)]));
    this.draw([head, ...setup, ...lines].join('\n'));
  }

  /** `◐ setup  npm ci  running 12.3s`, then `✔ setup  npm ci  done 14.0s` (or restored, or ✖ failed and why). */
  private setupLine(p: SetupProgress): string {
    const [icon, style] = p.status === 'running' ? ICON.running : p.status === 'done' ? ICON.done : ICON.escalated;
    const elapsed = formatElapsed(p.durationMs ?? this.clock() - p.startedAt);
    const what = p.restored ? 'restored from the setup cache' : p.command ? oneLine(p.command, 60) : '';
    const why = p.failure ? `  ${this.paint('red', oneLine(p.failure, 120))}` : '';
    return `${this.paint(style, icon)} setup  ${what}  ${this.paint('gray', `${p.status} ${elapsed}`)}${why}`;
  }

  private taskLine(t: TaskSnapshot): string {
    const [icon, style] = ICON[t.status];
    const attempt = t.attempts > 0 ? `attempt ${t.attempts}` : '';
    const elapsed = t.startedAt ? formatElapsed((t.endedAt ?? this.clock()) - t.startedAt) : '';
    const sha = t.checkpointSha ? t.checkpointSha.slice(0, 7) : '';
    const meta = [t.status.replace('_', ' '), attempt, elapsed, sha].filter(Boolean).join('  ');
    const warn = t.passedBefore ? `  ${this.paint('yellow', '⚠ its verification passed before the task ran')}` : '';
    return `${this.paint(style, icon)} ${t.id}  ${t.title}  ${this.paint('gray', meta)}${warn}`;
  }

  private failureLine(t: TaskSnapshot, indentWidth: number): string {
    // The headline ("verification `x` exited with code 1") and the lines that explain it, on one line.
    const prefix = 'last failure: ';
    const columns = this.stream.columns;
    const width = columns && columns > 0 ? Math.max(40, columns - indentWidth - prefix.length) : 160;
    return this.paint('red', `${prefix}${summarizeFailure(t.lastError ?? '', width)}`);
  }

  private paint(style: Style, text: string): string {
    return this.color ? styleText(style, text) : text;
  }
}

/** What happened to the escalated task, by why it escalated. */
function escalationHeadline(e: Escalation): string {
  if (e.cause === 'passes_before') return `task ${e.task_id} did not run: its verification already passes before the task (verification_baseline: require_red).`;
  if (e.cause === 'no_progress')
    return `task ${e.task_id} made no progress: its last ${e.attempts > 1 ? 'verification failures were' : 'verification failure was'} identical, after ${e.attempts} attempt(s).`;
  return `task ${e.task_id} failed after ${e.attempts} attempt(s).`;
}

export function formatElapsed(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
}

/** Untrusted text (a command, a failure) on one line, escapes removed, cut at `max` characters. */
function oneLine(text: string, max: number): string {
  const chars = Array.from(plainText(text).replace(/\s+/g, ' ').trim());
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : chars.join('');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}
