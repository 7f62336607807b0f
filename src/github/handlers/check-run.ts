import type { Context } from 'probot';
import type { AcceptEvent } from './base.js';
import { checkRunEvent } from './payload-events.js';

/** check_run.completed on a goal branch: the repository's CI has spoken on a goal PR's head. */
export function onCheckRun(intake: AcceptEvent) {
  return async (context: Context<'check_run.completed'>): Promise<void> => {
    const event = checkRunEvent(context.id, context.payload);
    if (event) return intake(event);
  };
}
