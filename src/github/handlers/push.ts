import type { Context } from 'probot';
import type { AcceptEvent } from './base.js';
import { pushEvent } from './payload-events.js';

/** push to the default branch (see payload-events.ts). */
export function onPush(intake: AcceptEvent) {
  return async (context: Context<'push'>): Promise<void> => {
    const event = pushEvent(context.id, context.payload);
    if (event) return intake(event);
  };
}
