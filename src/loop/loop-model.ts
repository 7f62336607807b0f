import type { BaseFollowedReport } from '../goal/base-followed.js';
import type { Escalation } from '../goal/escalation.js';
import type { Baseline, BaselinePolicy, Evidence } from '../goal/evidence.js';
import type { LoopLimits } from '../goal/limits.js';
import type { Risk } from '../goal/schema.js';
import type { GoalState, TaskStatus } from '../goal/states.js';
import type { PendingPush } from '../ports/workspace.js';

/** What the pure controller knows about one task. */
export interface TaskView {
  id: string;
  title: string;
  dependencies: string[];
  risk: Risk;
  requiresApproval: boolean;
  approved: boolean;
  maxRetries: number;
  status: TaskStatus;
  /** Attempts over the goal's whole life (numbering for GOAL_ATTEMPT and trailers). */
  attempts: number;
  /** Attempts in this run; a resume or `/goal retry` starts them again at zero. */
  runAttempts: number;
  /** Failed attempts in this run, for `errors_recovered` once the task passes. */
  runFailures: number;
  checkpointSha?: string;
  /** What the verification does before the task's change (spec `expect`; default red). */
  expect?: 'red' | 'green';
  /** The verification's result on the tree without this task's change, once known in this run. */
  baseline?: Baseline;
  /** Identical verification failures in a row in this run, and the last one's signature. */
  sameFailures?: number;
  lastFailureSignature?: string;
  /** Order in which checkpoints landed on the branch (resumed ones first, in git order). */
  checkpointSeq?: number;
  lastError?: string;
  /** What its next attempt must repair (the base branch moved: a conflict, or its verification now fails); fed to the agent. */
  repair?: string;
}

export interface LoopCounters {
  iterations: number;
  consecutiveErrors: number;
  errors: number;
  errorsRecovered: number;
  costUsd: number;
}

export interface LoopState {
  phase: GoalState;
  tasks: TaskView[];
  /** The task being worked, when the phase is about one. */
  currentTaskId?: string;
  counters: LoopCounters;
  limits: LoopLimits;
  startedAtMs: number;
  stopReason?: string;
  /**
   * The first task that escalated in this run (while the loop goes on with independent work), or,
   * once the goal rests in ESCALATED, the escalation as reported: with the other escalated tasks,
   * the blocked dependents and what was checkpointed meanwhile.
   */
  escalation?: Escalation;
  /**
   * Repo config `on_escalation`: `continue` (absent) keeps working every task that does not
   * depend on an escalated one before the goal rests in ESCALATED; `stop` rests at once.
   */
  onEscalation?: OnEscalation;
  /** Repo config `verification_baseline`, tightened by the spec; absent: off (no baseline runs). */
  baselinePolicy?: BaselinePolicy;
  /** The task whose baseline is running (its attempt has not begun). */
  baselineTaskId?: string;
  /** This run found the final gate already passed on the branch's tip: it need not run again. */
  gatePassed?: boolean;
  /** This run brought the goal branch onto its moved base branch (shown in the status). */
  followedBase?: BaseFollowedReport;
}

/** The start event's account of following the base branch (see Workspace.followBase). */
export interface FollowedBase extends Omit<BaseFollowedReport, 'repairs'> {
  /** Each task to repair, with what its next attempt is told. */
  repairs: Array<{ taskId: string; why: 'conflict' | 'verification' | 'dropped'; detail: string }>;
  /** What no task can repair (a person's commit that no longer applies): the goal escalates with it. */
  unrepairable?: string;
  /** The branch was left as it was: nothing is pushed or reported (the escalation says why). */
  kept?: boolean;
  /** The rewritten branch, to push (under a lease of the tip it replaced). */
  push?: PendingPush;
}

export type { BaseFollowedReport } from '../goal/base-followed.js';

export type OnEscalation = 'continue' | 'stop';

export type ExecutionFailureKind = 'task' | 'infra' | 'budget';

export type LoopEvent =
  /** `gatePassed`: every task is checkpointed and the final gate already passed on this tip (a rerun of a finished goal). */
  | { type: 'start'; at: number; checkpoints: Array<{ taskId: string; sha: string }>; setupFailure?: string; gatePassed?: boolean; followedBase?: FollowedBase }
  | { type: 'executed'; at: number; ok: true; costUsd?: number }
  | { type: 'executed'; at: number; ok: false; kind: ExecutionFailureKind; error: string; costUsd?: number }
  | { type: 'baseline_done'; at: number; passed: boolean; output: string }
  /** `signature`: the failure with timings, paths and addresses taken out, hashed (same signature: no progress). */
  | { type: 'verified'; at: number; passed: boolean; output: string; signature?: string }
  /** `push`: committed, to be pushed from the outbox (absent: the workspace pushed it). */
  | { type: 'checkpointed'; at: number; sha: string; push?: PendingPush }
  /** A checkpoint's push was rejected: the workspace is back at the remote's tip, whose `checkpoints` are all that is done. */
  | { type: 'unpushed'; at: number; error: string; checkpoints: Array<{ taskId: string; sha: string }> }
  | { type: 'checkpoint_refused'; at: number; reason: string }
  | { type: 'gate_done'; at: number; passed: boolean; output: string }
  | { type: 'infra_error'; at: number; error: string }
  | { type: 'interrupted'; at: number; request: 'pause' | 'stop'; reason: string };

export type Effect =
  | { type: 'execute'; taskId: string; attempt: number; previousFailure?: string }
  /** The task's verification on the tree without its change, before its attempt `attempt`. */
  | { type: 'baseline'; taskId: string; attempt: number }
  | { type: 'verify'; taskId: string; attempt: number }
  | { type: 'checkpoint'; taskId: string; attempt: number; evidence: Evidence }
  /** `bestEffort`: the goal is coming to rest; a failure is logged, not turned into an event. */
  | { type: 'rollback'; bestEffort?: boolean }
  | { type: 'final_gate' }
  | { type: 'checkpointed'; taskId: string; sha: string; push?: PendingPush }
  | { type: 'escalate'; escalation: Escalation }
  /** The goal branch was brought onto its base: the rewritten branch is pushed, then people are told. */
  | { type: 'base_followed'; report: BaseFollowedReport; push?: PendingPush }
  | { type: 'request_approval'; taskIds: string[] }
  | { type: 'finish' };

export interface Transition {
  from: GoalState;
  to: GoalState;
  event: string;
  detail?: string;
}

export interface Decision {
  state: LoopState;
  transitions: Transition[];
  effects: Effect[];
}

export const FINAL_GATE_TASK = 'final-gate';
/** Pseudo task id for following the base branch (a person's commit that no longer applies on it). */
export const FOLLOW_BASE_TASK = 'follow-base';
/** Pseudo task id for a failure of the repo's `setup` commands. */
export const SETUP_TASK = 'setup';
