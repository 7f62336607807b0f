import type { Context } from 'probot';
import { type AcceptEvent, eventBase, fromBot } from './base.js';

/** issues.labeled / unlabeled / closed: hand the event over; the worker authorizes and acts. */
export function onIssues(intake: AcceptEvent) {
  return async (context: Context<'issues.labeled' | 'issues.unlabeled' | 'issues.closed'>): Promise<void> => {
    if (fromBot(context)) return;
    const base = eventBase(context);
    if (!base) return;
    const { payload } = context;
    const issue = payload.issue;
    if (payload.action === 'closed') return intake({ ...base, type: 'issue_closed', issue });
    const label = 'label' in payload ? payload.label?.name : undefined;
    if (!label) return;
    return intake({ ...base, type: payload.action === 'labeled' ? 'labeled' : 'unlabeled', label, issue });
  };
}
