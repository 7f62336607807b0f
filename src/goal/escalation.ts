/** Why a goal rests in ESCALATED: the task that exhausted its attempts, and its last error. */
export interface Escalation {
  task_id: string;
  attempts: number;
  last_error: string;
}
