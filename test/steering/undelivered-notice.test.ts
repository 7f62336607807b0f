import { describe, expect, it } from 'vitest';
import { undeliveredNotice } from '../../src/steering/report/status-comment.js';

describe('the status comment names the reports given up', () => {
  it('none: no notice', () => {
    expect(undeliveredNotice([])).toBeUndefined();
  });

  it('one: which report and when, as a warning, and where to see why', () => {
    expect(undeliveredNotice([{ kind: 'escalate', givenUpAt: '2026-12-01T17:40:12.345Z' }])).toBe(
      "> [!WARNING]\n> A report could not be delivered: the escalation comment (given up 2026-12-01T17:40:12Z), every try failed. `goal-loop status` on the App's server says why.",
    );
  });

  it('many: the last five listed, the rest counted; an unknown kind is "a report"', () => {
    const many = Array.from({ length: 7 }, (_, i) => ({ kind: i === 6 ? 'something-new' : 'comment', givenUpAt: `2026-12-01T17:4${i}:00Z` }));
    const lines = undeliveredNotice(many)!.split('\n');
    expect(lines[1]).toMatch(/^> Reports could not be delivered, every try failed/);
    expect(lines.slice(2)).toEqual([
      '> - a comment (given up 2026-12-01T17:42:00Z)',
      '> - a comment (given up 2026-12-01T17:43:00Z)',
      '> - a comment (given up 2026-12-01T17:44:00Z)',
      '> - a comment (given up 2026-12-01T17:45:00Z)',
      '> - a report (given up 2026-12-01T17:46:00Z)',
      '> - and 2 earlier',
    ]);
  });
});
