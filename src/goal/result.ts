import type { BaseFollowedReport } from './base-followed.js';
import type { Escalation } from './escalation.js';
import type { LoopLimits } from './limits.js';
import type { GoalState, TaskStatus } from './states.js';
import type { Usage } from './usage.js';

export type LoopStatus = GoalState;

/** The CLI's `--json` output (DESIGN.md section 3). */
export interface LoopResult {
  goal_id: string;
  status: LoopStatus;
  success: boolean;
  tasks_completed: number;
  tasks_total: number;
  iterations: number;
  errors_recovered: number;
  tokens: Usage;
  cost_usd: number;
  duration_s: number;
  stop_reason: string | null;
  branch: string;
  checkpoints: Array<{ task_id: string; sha: string }>;
  escalation?: Escalation;
}

export interface TaskSnapshot {
  id: string;
  title: string;
  dependencies: string[];
  status: TaskStatus;
  attempts: number;
  checkpointSha?: string;
  lastError?: string;
  /** In this run, its verification passed before the task made any change (expect red): it proves nothing about the task. */
  passedBefore?: boolean;
  /** When the current or last attempt of this run started and ended (ms since epoch). */
  startedAt?: number;
  endedAt?: number;
}

/** Everything a Forge needs to show a goal's progress. */
export interface GoalSnapshot {
  goalId: string;
  objective: string;
  repo: string;
  branch: string;
  state: GoalState;
  stopReason?: string;
  currentTaskId?: string;
  tasks: TaskSnapshot[];
  iterations: number;
  tokens: Usage;
  costUsd: number;
  limits: LoopLimits;
  startedAt: number;
  escalation?: Escalation;
  /** This run's setup, once it started (absent when the repo config has no setup). */
  setup?: SetupProgress;
  /** This run brought the goal branch onto its moved base branch. */
  followedBase?: BaseFollowedReport;
}

/** The repo's setup step of this run, as shown live (terminal, status comment). */
export interface SetupProgress {
  status: 'running' | 'done' | 'failed';
  /** The command running now, or the last one that ran (absent when the setup cache was restored). */
  command?: string;
  /** Epoch ms: when setup started. */
  startedAt: number;
  /** Once it ended. */
  durationMs?: number;
  /** Its output was put back from the setup cache: no command ran. */
  restored?: boolean;
  /** Why it failed, in one line (the escalation has the whole of it). */
  failure?: string;
}

/** Exit codes of the CLI (DESIGN.md section 3). */
export const EXIT = { complete: 0, badInput: 1, escalated: 2, stopped: 3, internal: 4 } as const;

export function exitCodeFor(status: LoopStatus): number {
  switch (status) {
    case 'LOOP_COMPLETE':
      return EXIT.complete;
    case 'ESCALATED':
      return EXIT.escalated;
    case 'FAILED':
      return EXIT.internal;
    default:
      return EXIT.stopped;
  }
}
