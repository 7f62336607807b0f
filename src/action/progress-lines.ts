import { plainText } from '../common/plain-text.js';
import type { GoalSnapshot } from '../goal/result.js';

/**
 * The job's log as a live task list: a line each time setup's step, a task's status or attempt
 * changes, and when the goal's state does. Task titles are untrusted: one line each, control characters out, and a
 * line never starts with `::` (a workflow command).
 */
export function progressPrinter(print: (line: string) => void): (s: GoalSnapshot) => void {
  const shown = new Map<string, string>();
  let state = '';
  let setup = '';
  return (s) => {
    if (s.state !== state) {
      state = s.state;
      print(`goal-loop: goal ${safe(s.goalId)} is ${s.state}`);
    }
    // Setup: a line as each command starts, and one when it ends (with its duration).
    const step = s.setup ? `${s.setup.status}:${s.setup.command ?? ''}` : '';
    if (s.setup && step !== setup) {
      const took = s.setup.durationMs !== undefined ? ` in ${(s.setup.durationMs / 1000).toFixed(1)} s` : '';
      const what = s.setup.restored ? ' (restored from the setup cache)' : s.setup.command ? `: ${safe(s.setup.command)}` : '';
      print(`goal-loop:   setup ${s.setup.status}${took}${what}`);
    }
    setup = step;
    for (const t of s.tasks) {
      const now = `${t.status}:${t.attempts}`;
      if (shown.get(t.id) === now) continue;
      const first = !shown.has(t.id);
      shown.set(t.id, now);
      if (first && t.status === 'pending' && t.attempts === 0) continue;
      print(`goal-loop:   ${safe(t.id)} ${safe(t.title)}: ${t.status.replace('_', ' ')}${t.attempts > 0 ? `, attempt ${t.attempts}` : ''}`);
    }
  };
}

const safe = (text: string) => plainText(text).replace(/\s+/g, ' ').trim().slice(0, 120);
