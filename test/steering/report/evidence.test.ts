import { describe, expect, it } from 'vitest';
import { evidenceLegend, evidenceMarkdown, evidenceWords, greenBefore } from '../../../src/steering/report/evidence.js';
import { baselineOf, groupAttempts, taskEvidence, taskProof, taskProofs } from '../../../src/steering/report/record.js';
import { baselineEntry, evidenceGoal, SHA } from './fixtures.js';

describe("a task's verification evidence, from the attempt record", () => {
  it("is its last checkpoint's evidence and its last baseline; a record older than evidence has none", () => {
    const { s, rows } = evidenceGoal();
    const v = groupAttempts(rows);
    expect(taskEvidence(v, 'api')).toBe('red->green');
    expect(taskEvidence(v, 'ui', SHA.ui)).toBe('green->green');
    expect(taskEvidence(v, 'old')).toBeUndefined();
    expect(taskEvidence(v, 'next')).toBeUndefined();
    // The baseline is the first entry of the first attempt; the task's later attempts have none.
    expect(baselineOf(v, 'ui')).toMatchObject({ kind: 'baseline', passed: true, expect: 'red' });
    expect(baselineOf(v, 'docs')).toBeUndefined();
    const proofs = taskProofs(v, s);
    expect([...proofs].filter(([, p]) => p.greenBefore).map(([id]) => id)).toEqual(['ui', 'strict']);
    expect(taskProof(v, 'refactor')).toMatchObject({ evidence: 'green->green', greenBefore: false });
  });

  it('warns of a green baseline only when the task expects red', () => {
    expect(greenBefore(baselineEntry(true, 'red'))).toBe(true);
    expect(greenBefore(baselineEntry(true, 'green'))).toBe(false);
    expect(greenBefore(baselineEntry(false, 'red'))).toBe(false);
    expect(greenBefore(undefined)).toBe(false);
    expect(evidenceMarkdown({ evidence: 'green->green', baseline: baselineEntry(true, 'red'), greenBefore: true })).toBe('⚠ `green → green`: its verification passed before the task ran');
    expect(evidenceMarkdown({ evidence: 'green->green', baseline: baselineEntry(true, 'green'), greenBefore: false })).toBe('`green → green` (as expected: `expect: green`)');
    expect(evidenceMarkdown({ evidence: 'red->green', greenBefore: false })).toBe('`red → green`');
    expect(evidenceMarkdown({ evidence: 'unchecked', greenBefore: false })).toBe('`unchecked`');
    // A task not done has no evidence yet, but its warning.
    expect(evidenceMarkdown({ baseline: baselineEntry(true), greenBefore: true }, false)).toBe('⚠ its verification passed before the task ran');
  });

  it('never quotes an evidence value the record holds: one that is not one of the three shows nothing', () => {
    expect(evidenceWords('bogus')).toBeUndefined();
    expect(evidenceWords('toString')).toBeUndefined();
    expect(evidenceMarkdown({ evidence: '<img src=x>' as never, greenBefore: false })).toBe('');
    expect(evidenceLegend(['bogus' as never, undefined])).toBeUndefined();
    expect(evidenceLegend(['red->green', 'red->green'])).toBe("**Evidence** — `red → green`: its verification failed before the task's change and passes with it.");
  });
});
