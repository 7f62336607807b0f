import type { Logger } from 'pino';
import type { Evidence } from '../goal/evidence.js';
import { addUsage, NO_USAGE, type Usage } from '../goal/usage.js';
import type { AttemptEntry, AttemptLog, AttemptOutcome, BaselineEntry, ToolCallSummary, TurnEntry } from '../ports/attempt-log.js';
import type { AttemptRecord, GoalChange, GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { CommandResult } from '../ports/sandbox.js';
import type { DiffStat } from '../ports/workspace.js';

/** Per attempt: entries and bytes (as JSON) of steps and turns kept before the rest of them is dropped (verification, checkpoint and end are always kept). */
export const ATTEMPT_MAX_ENTRIES = 120;
export const ATTEMPT_MAX_BYTES = 48 * 1024;
/** Per field: an output's tail, the model's words, a tool call's input and result, a command. */
const TAIL_CHARS = 2000;
const TEXT_CHARS = 1200;
const TOOL_INPUT_CHARS = 200;
const TOOL_RESULT_CHARS = 300;
const COMMAND_CHARS = 500;
const TOOLS_PER_TURN = 20;

interface Open {
  entries: number;
  bytes: number;
  truncated: boolean;
  startedAt: number;
  usage: Usage;
  costUsd: number;
}

/**
 * Writes the attempt record (ports/attempt-log.ts) as each attempt goes, bounded per attempt: the
 * full logs stay in the scratchpad. A failed write is logged and never stops the loop.
 */
export class AttemptRecorder {
  private readonly open = new Map<string, Open>();
  /** Entries and attempt results waiting for the step they belong to (see `take`). */
  private pending: NonNullable<GoalChange['attemptEntries']> = [];
  private pendingAttempts: AttemptRecord[] = [];

  constructor(
    private readonly log: AttemptLog & Partial<Pick<GoalLedger, 'recordAttempt'>>,
    private readonly key: GoalKey,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
    /**
     * Keep entries for the next step's transaction (`take`) instead of one write each; a model
     * turn, shown live while the agent works, is still written at once (after what waits, in order).
     */
    private readonly deferred = false,
  ) {}

  /** What waits for the step being written: it goes in the same transaction. */
  take(): Pick<GoalChange, 'attempts' | 'attemptEntries'> {
    const out = { ...(this.pendingAttempts.length > 0 ? { attempts: this.pendingAttempts } : {}), ...(this.pending.length > 0 ? { attemptEntries: this.pending } : {}) };
    this.pending = [];
    this.pendingAttempts = [];
    return out;
  }

  /** A command's result (GoalLedger.recordAttempt), with the step when deferred. */
  async result(a: AttemptRecord): Promise<void> {
    if (this.deferred) {
      this.pendingAttempts.push(a);
      return;
    }
    await this.log.recordAttempt?.(this.key, a);
  }

  /** The attempt starts now (its end's duration counts from here). */
  begin(taskId: string, attempt: number): void {
    this.open.delete(id(taskId, attempt));
    this.state(taskId, attempt);
  }

  step(taskId: string, attempt: number, command: string, r: CommandResult): Promise<void> {
    return this.append(taskId, attempt, {
      kind: 'step',
      command: head(command, COMMAND_CHARS),
      exitCode: r.exitCode,
      durationMs: Math.round(r.durationMs),
      timedOut: r.timedOut,
      ...(r.stalled ? { stalled: true as const } : {}),
      tail: tail(r.output, TAIL_CHARS),
    });
  }

  turn(taskId: string, attempt: number, t: { turn: number; text: string; tools: ToolCallSummary[] }): Promise<void> {
    const tools = t.tools.slice(0, TOOLS_PER_TURN).map((c) => ({ name: head(c.name, 64), input: head(c.input, TOOL_INPUT_CHARS), result: head(c.result, TOOL_RESULT_CHARS), isError: c.isError }));
    const entry: TurnEntry = { kind: 'turn', turn: t.turn, text: head(t.text, TEXT_CHARS), tools };
    if (t.tools.length > TOOLS_PER_TURN) entry.tools.push({ name: '…', input: `${t.tools.length - TOOLS_PER_TURN} more tool calls`, result: '', isError: false });
    return this.append(taskId, attempt, entry);
  }

  verify(taskId: string, attempt: number, command: string, r: CommandResult): Promise<void> {
    const passed = r.exitCode === 0;
    return this.append(taskId, attempt, {
      kind: 'verify',
      command: head(command, COMMAND_CHARS),
      exitCode: r.exitCode,
      durationMs: Math.round(r.durationMs),
      timedOut: r.timedOut,
      passed,
      tail: tail(r.output, TAIL_CHARS),
    });
  }

  checkpoint(taskId: string, attempt: number, sha: string, stat: DiffStat | undefined, evidence?: Evidence): Promise<void> {
    // One line per path: a name holding a line break or a control character (a task names its
    // files) is escaped, so it cannot pass for more lines.
    const lines = (stat?.paths ?? []).map((p) => `${escapeControls(p.path)} ${p.added === null ? 'bin' : `+${p.added} -${p.deleted}`}`);
    return this.append(taskId, attempt, {
      kind: 'checkpoint',
      sha,
      files: stat?.files ?? 0,
      insertions: stat?.insertions ?? 0,
      deletions: stat?.deletions ?? 0,
      stat: head(lines.join('\n'), TAIL_CHARS),
      ...(evidence ? { evidence } : {}),
    });
  }

  /** The task's verification before its change (the first entry of the attempt it precedes). */
  baseline(taskId: string, attempt: number, entry: Omit<BaselineEntry, 'kind' | 'tail' | 'command'>, command: string, output: string): Promise<void> {
    return this.append(taskId, attempt, { kind: 'baseline', ...entry, command: head(command, COMMAND_CHARS), tail: tail(output, TAIL_CHARS) });
  }

  /** What the agent spent in this attempt (summed into its end). */
  spent(taskId: string, attempt: number, usage: Usage, costUsd: number): void {
    const o = this.state(taskId, attempt);
    o.usage = addUsage(o.usage, usage);
    o.costUsd += costUsd;
  }

  /** The attempt's last entry: why it ended. Never dropped by the bound. */
  async end(taskId: string, attempt: number, outcome: AttemptOutcome, reason: string): Promise<void> {
    const o = this.state(taskId, attempt);
    const entry: AttemptEntry = { kind: 'end', outcome, reason: head(oneLine(reason), 300), tokens: o.usage, costUsd: o.costUsd, durationMs: Math.max(0, this.clock() - o.startedAt) };
    this.open.delete(id(taskId, attempt));
    await this.write(taskId, attempt, entry);
  }

  private async append(taskId: string, attempt: number, entry: AttemptEntry): Promise<void> {
    const o = this.state(taskId, attempt);
    // The verification and the checkpoint are what a reader needs most: once each per attempt,
    // kept past the bound like the end (steps and turns are what fill it).
    const always = entry.kind === 'verify' || entry.kind === 'checkpoint' || entry.kind === 'baseline';
    if (o.truncated && !always) return;
    const bytes = JSON.stringify(entry).length;
    if (!always && (o.entries + 1 >= ATTEMPT_MAX_ENTRIES || o.bytes + bytes > ATTEMPT_MAX_BYTES)) {
      o.truncated = true;
      await this.write(taskId, attempt, {
        kind: 'truncated',
        dropped: `the record of this attempt reached its bound (${ATTEMPT_MAX_ENTRIES} entries or ${ATTEMPT_MAX_BYTES / 1024} KB); the rest is in the scratchpad's logs`,
      });
      return;
    }
    o.entries++;
    o.bytes += bytes;
    await this.write(taskId, attempt, entry);
  }

  private async write(taskId: string, attempt: number, entry: AttemptEntry): Promise<void> {
    if (this.deferred && entry.kind !== 'turn') {
      this.pending.push({ taskId, attempt, entry });
      return;
    }
    const waiting = this.pending;
    this.pending = [];
    for (const w of [...waiting, { taskId, attempt, entry }]) {
      try {
        await this.log.appendAttemptEntry(this.key, w.taskId, w.attempt, w.entry);
      } catch (err) {
        this.logger.warn({ err, goal: this.key.goalId, task: w.taskId, attempt: w.attempt }, 'cannot write the attempt record');
      }
    }
  }

  private state(taskId: string, attempt: number): Open {
    const k = id(taskId, attempt);
    let o = this.open.get(k);
    if (!o) {
      o = { entries: 0, bytes: 0, truncated: false, startedAt: this.clock(), usage: { ...NO_USAGE }, costUsd: 0 };
      this.open.set(k, o);
    }
    return o;
  }
}

/** The outcome a failed command stands for. */
export function commandOutcome(r: CommandResult): AttemptOutcome {
  // A stall is a timeout of its own kind: the command was killed for doing nothing.
  return r.timedOut || r.stalled ? 'timeout' : 'failed';
}

const id = (taskId: string, attempt: number) => `${taskId}#${attempt}`;
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Cuts never split a surrogate pair (a lone half is not valid text: PostgreSQL's jsonb refuses it). */
function head(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = max - 1;
  if (/[\ud800-\udbff]/.test(s.charAt(end - 1))) end -= 1;
  return `${s.slice(0, end)}…`;
}

function tail(s: string, max: number): string {
  if (s.length <= max) return s;
  let start = s.length - (max - 1);
  if (/[\udc00-\udfff]/.test(s.charAt(start))) start += 1;
  return `…${s.slice(start)}`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: escaping control characters in untrusted text is the point
const escapeControls = (s: string) => s.replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
