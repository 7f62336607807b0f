import type { RepoConfig } from '../../config/repo-config.js';
import type { GoalSpec } from '../../goal/schema.js';
import type { GoalState } from '../../goal/states.js';
import type { ControlRequest, GoalKey, TaskRecord } from '../../ports/ledger.js';
import type { GoalMode } from '../../ports/queue.js';
import type { GitHubGoalMeta } from '../goal-meta.js';
import type { Reaction } from '../issue-forge.js';

/**
 * One small, explicit thing to do for an event, decided purely (decide/) and performed in order
 * by act.ts. Goal actions act on the goal the event is about (EventDecision.key).
 */
export type Action =
  | { type: 'comment'; issueNumber: number; body: string }
  /** A reaction on the command's comment; a failed reaction is logged, never fatal. */
  | { type: 'react'; content: Reaction }
  | { type: 'log'; msg: string; data: Record<string, unknown> }
  | { type: 'upsertGoal'; spec: GoalSpec; branch: string; priority?: string }
  /**
   * The issue's plan, accepted for an existing goal: a valid spec becomes the goal's spec and
   * `issuePlan` its kind, unless a loop runs the goal when this is performed (checked then, not
   * only when deciding): its tasks must not change under it, so the plan is left to its next turn.
   */
  | { type: 'acceptPlan'; spec?: GoalSpec; branch: string; issuePlan: NonNullable<GitHubGoalMeta['issuePlan']> }
  /** Merged into the goal's meta; a key set to null is removed. */
  | { type: 'setMeta'; patch: { [K in keyof GitHubGoalMeta]?: GitHubGoalMeta[K] | null } }
  /** Appended to the goal's pending reviews at once (pending-reviews.ts): a run may be taking answered ones meanwhile. */
  | { type: 'addPendingReview'; review: NonNullable<GitHubGoalMeta['pendingReviews']>[number] }
  | { type: 'setControl'; control: ControlRequest | null }
  | { type: 'setState'; state: GoalState; event: string; detail: string; stopReason: string | null }
  | { type: 'updateTask'; taskId: string; patch: Partial<Pick<TaskRecord, 'approved' | 'status'>> }
  | { type: 'schedule'; mode: GoalMode; priority: string }
  /** A draft made ready for review (the repository's checks passed on its head), or a ready PR made a draft again (they failed). */
  | { type: 'setDraft'; prNumber: number; draft: boolean }
  /** Drops a queued run of the goal that has not started yet. */
  | { type: 'cancel' }
  /** When no worker runs the goal (asked at that moment), applies its pause or stop to its resting state. */
  | { type: 'settleRestingIfIdle' };

/** What to do for one event: the goal it is about (when there is one) and the actions, in order. */
export interface EventDecision {
  key?: GoalKey;
  actions: Action[];
}

/** What I/O found out about the goal an event is about (the ledger's record, meta read through its schema). */
export interface GoalView {
  key: GoalKey;
  state: GoalState;
  priority: string;
  spec: GoalSpec;
  meta: GitHubGoalMeta;
}

/** `.github/goal-loop.yml`, or why it is invalid. */
export type ConfigFact = { ok: true; config: RepoConfig } | { ok: false; problems: string[] };
