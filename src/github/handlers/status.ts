import type { Context } from 'probot';
import type { AcceptEvent } from './base.js';
import { statusEvent } from './payload-events.js';

/** status (a commit status, not pending) on a goal branch: the repository's CI has spoken on a goal PR's head. */
export function onStatus(intake: AcceptEvent) {
  return async (context: Context<'status'>): Promise<void> => {
    const event = statusEvent(context.id, context.payload);
    if (event) return intake(event);
  };
}
