import type { Context } from 'probot';
import type { AcceptEvent } from './base.js';
import { issuesEvent } from './payload-events.js';

/** issues.labeled / unlabeled / closed: hand the event over; the worker authorizes and acts. */
export function onIssues(intake: AcceptEvent) {
  return async (context: Context<'issues.labeled' | 'issues.unlabeled' | 'issues.closed'>): Promise<void> => {
    const event = issuesEvent(context.id, context.payload);
    if (event) return intake(event);
  };
}
