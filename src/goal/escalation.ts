/** Why a goal rests in ESCALATED: the task that exhausted its attempts, and its last error. */
export interface Escalation {
  task_id: string;
  attempts: number;
  last_error: string;
  /**
   * Why it escalated before its attempts ran out: `no_progress` (the same verification failure
   * `max_same_failure` times in a row), `passes_before` (its verification passed before the task
   * ran, under `verification_baseline: require_red`). Absent: out of attempts.
   */
  cause?: EscalationCause;
  /** Other tasks that ran out of attempts in the same run, after `task_id` (repo config `on_escalation: continue`). */
  also_escalated?: string[];
  /** Tasks not run because they depend (transitively) on an escalated task. */
  blocked?: string[];
  /** Tasks checkpointed in the same run after `task_id` escalated (work that did not depend on it). */
  done_meanwhile?: string[];
}

export type EscalationCause = 'no_progress' | 'passes_before';
