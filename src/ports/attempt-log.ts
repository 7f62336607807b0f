import type { Evidence } from '../goal/evidence.js';
import type { Usage } from '../goal/usage.js';
import type { GoalKey } from './goal-ledger.js';

/**
 * The attempt record: what each attempt of a task did, written to the ledger as it goes, so any
 * process (another worker, `goal-loop logs --follow`, the check run) can show it. Bounded per
 * attempt (loop/attempt-recorder.ts); the full logs stay in the scratchpad. Every string in it
 * is untrusted text (commands, output, the model's words), stored and quoted, never interpreted.
 */
export type AttemptEntry = StepEntry | TurnEntry | BaselineEntry | VerifyEntry | CheckpointEntry | EndEntry | TruncatedEntry;

/**
 * The task's verification on the tree without its change, before its first attempt (DESIGN.md
 * §10): `passed` false is the red that makes a later green mean something.
 */
export interface BaselineEntry extends Omit<VerifyEntry, 'kind'> {
  kind: 'baseline';
  /** The same verification already ran on the same tree (another task's baseline): not run again. */
  reused?: boolean;
  /** The tree it ran on (the last checkpoint's): a later baseline of the same command there reuses it. */
  tree?: string;
  /** What the task expects of it (`expect`), and the policy that judged it. */
  expect: 'red' | 'green';
  policy: 'warn' | 'require_red';
}

/** A deterministic run step (or a setup / gate command). */
export interface StepEntry {
  kind: 'step';
  command: string;
  exitCode: number | null;
  durationMs: number;
  timedOut: boolean;
  /** Killed as stalled: no output, no file written, no CPU used for the stall bound (setup). */
  stalled?: true;
  /** The end of its output (a failure's explanation is at the end). */
  tail: string;
}

/** One model request of the agent: what it said, and each tool call it made with what came back. */
export interface TurnEntry {
  kind: 'turn';
  turn: number;
  text: string;
  tools: ToolCallSummary[];
}

export interface ToolCallSummary {
  name: string;
  /** A short rendering of the input (a path, a command, a pattern). */
  input: string;
  /** The start of the result, or the error. */
  result: string;
  isError: boolean;
}

export interface VerifyEntry {
  kind: 'verify';
  command: string;
  exitCode: number | null;
  durationMs: number;
  timedOut: boolean;
  passed: boolean;
  tail: string;
}

export interface CheckpointEntry {
  kind: 'checkpoint';
  sha: string;
  files: number;
  insertions: number;
  deletions: number;
  /** `git diff --stat`'s per-file lines, bounded. */
  stat: string;
  /** What its verification proves (`Goal-Verified`); absent in records older than the trailer. */
  evidence?: Evidence;
}

/** Why the attempt ended: always the last entry of a finished attempt. */
export type AttemptOutcome = 'passed' | 'failed' | 'timeout' | 'turn_limit' | 'budget' | 'refused' | 'infra' | 'interrupted';

export interface EndEntry {
  kind: 'end';
  outcome: AttemptOutcome;
  /** One line: what failed, or what the attempt changed. */
  reason: string;
  tokens: Usage;
  costUsd: number;
  durationMs: number;
}

/** Written once when an attempt reaches its bound; entries after it (but its end) are dropped. */
export interface TruncatedEntry {
  kind: 'truncated';
  dropped: string;
}

export interface AttemptLogEntry {
  /** Increasing across the whole ledger: `--follow` asks for what came after the last one it saw. */
  seq: number;
  at: string;
  taskId: string;
  attempt: number;
  entry: AttemptEntry;
}

export interface AttemptLogFilter {
  taskId?: string;
  attempt?: number;
  afterSeq?: number;
}

export interface AttemptLog {
  appendAttemptEntry(key: GoalKey, taskId: string, attempt: number, entry: AttemptEntry): Promise<void>;
  /** Oldest first. */
  listAttemptEntries(key: GoalKey, filter?: AttemptLogFilter): Promise<AttemptLogEntry[]>;
}
