/**
 * The events `goal-loop action` handles, each with the activity types it acts on: the App's
 * webhooks (src/github/app.ts) plus `workflow_dispatch`, the one event a workflow's own token
 * may start, which continues a goal whose run reached its time budget. A workflow that lists an
 * event or a type outside this list starts runs that can only do nothing.
 */
export const ACTION_EVENTS = {
  issues: { types: ['labeled', 'unlabeled', 'closed'], inputs: [] },
  issue_comment: { types: ['created'], inputs: [] },
  pull_request_review: { types: ['submitted'], inputs: [] },
  pull_request: { types: ['closed'], inputs: [] },
  /** No activity types; its `issue` input names the goal (the issue number) to go on with. */
  workflow_dispatch: { types: [], inputs: ['issue'] },
} as const satisfies Record<string, ActionEventSpec>;

/** What one event of ACTION_EVENTS says: its activity types, and the inputs it carries (workflow_dispatch). */
export interface ActionEventSpec {
  readonly types: readonly string[];
  readonly inputs: readonly string[];
}

/** An event name `goal-loop action` handles. */
export type ActionEventName = keyof typeof ACTION_EVENTS;

/** An activity type of one such event (`labeled` for `issues`, …). */
export type ActionEventType<E extends ActionEventName> = (typeof ACTION_EVENTS)[E]['types'][number];
