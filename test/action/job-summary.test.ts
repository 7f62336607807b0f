import { describe, expect, it } from 'vitest';
import { JOB_SUMMARY_BUDGET_BYTES, renderJobSummary } from '../../src/action/job-summary.js';
import type { GoalSnapshot } from '../../src/goal/result.js';
import type { AttemptEntry, AttemptLogEntry } from '../../src/ports/attempt-log.js';
import { renderCheckRun } from '../../src/steering/report/check-run.js';
import { type AttemptView, groupAttempts } from '../../src/steering/report/record.js';
import { evidenceGoal, SHA, snapshot } from '../steering/report/fixtures.js';
import { markdownProblems, prose } from '../steering/report/markdown-structure.js';

const CTX = { repoUrl: 'https://github.com/octo-org/widgets', goalId: '7' };
const NO_USAGE = { input: 0, output: 0, cache_read: 0, cache_write: 0 };
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

const views = (rows: [string, number, AttemptEntry][]): AttemptView[] => groupAttempts(rows.map(([taskId, attempt, entry], i): AttemptLogEntry => ({ seq: i + 1, at: '', taskId, attempt, entry })));

const EVIL = [
  '```',
  '</details>',
  '<details><summary>owned</summary>',
  '@someone please look',
  '<img src=x onerror=alert(1)>',
  '[click](https://evil.example/x) and #12',
  '\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x07link\x1b]8;;\x07',
  '````` and ~~~',
  '| a | b |',
].join('\n');

function expectInert(md: string): void {
  expect(markdownProblems(md)).toEqual([]);
  const p = prose(md);
  expect(p).not.toMatch(/(?<!\\)<img/);
  expect(p).not.toMatch(/@someone/);
  expect(p).not.toMatch(/<details><summary>owned/);
  expect(p).not.toMatch(/\]\(https:\/\/evil/);
  expect(p).not.toMatch(/(?<!\\)\|/);
  expect(p.split('\n').filter((l) => l.includes('</details>') && l !== '</details>')).toEqual([]);
  expect(md).not.toContain('\x1b');
  // A URL in prose is shown, never linked (inside a fence or a code span it is inert anyway).
  expect(p).not.toMatch(/https:\/\/evil/);
}

function goal(): { s: GoalSnapshot; v: AttemptView[] } {
  const s = snapshot([
    { id: 'api', title: 'Add the API', status: 'done', attempts: 1, checkpointSha: 'abcdef0123456789abcdef0123456789abcdef01' },
    { id: 'ui', title: 'Build the UI', status: 'escalated', attempts: 2, dependencies: ['api'] },
    { id: 'docs', title: 'Write docs', status: 'pending', dependencies: ['ui'] },
  ]);
  s.objective = 'Ship the widget dashboard';
  s.stopReason = 'task ui escalated after 2 attempts';
  s.costUsd = 1.5;
  const v = views([
    ['api', 1, { kind: 'verify', command: 'npm test', exitCode: 0, durationMs: 5, timedOut: false, passed: true, tail: 'ok' }],
    ['api', 1, { kind: 'end', outcome: 'passed', reason: '2 file(s) changed', tokens: NO_USAGE, costUsd: 0.5, durationMs: 5 }],
    ['ui', 1, { kind: 'verify', command: 'npx tsc', exitCode: 2, durationMs: 5, timedOut: false, passed: false, tail: 'src/ui.ts(3,1): error TS2322: bad' }],
    ['ui', 1, { kind: 'end', outcome: 'failed', reason: 'verification failed', tokens: NO_USAGE, costUsd: 0.5, durationMs: 5 }],
    ['ui', 2, { kind: 'verify', command: 'npx tsc', exitCode: 2, durationMs: 5, timedOut: false, passed: false, tail: 'src/ui.ts(4,1): error TS2322: still bad' }],
    ['ui', 2, { kind: 'end', outcome: 'failed', reason: 'verification failed again', tokens: NO_USAGE, costUsd: 0.5, durationMs: 5 }],
  ]);
  return { s, v };
}

describe('the job summary (GITHUB_STEP_SUMMARY)', () => {
  it('shows the objective, state, issue, branch, PR, run note, stop reason, checklist, budget and every attempt', () => {
    const { s, v } = goal();
    const md = renderJobSummary(s, v, { ...CTX, prUrl: 'https://github.com/octo-org/widgets/pull/12', runNote: 'Continued in a new run: time budget reached' });
    const lines = md.split('\n');
    expect(lines[0]).toBe('## goal-loop: Ship the widget dashboard');
    expect(md).toContain('> Continued in a new run: time budget reached');
    expect(md).toContain(
      '**State:** `ESCALATED` · **Issue:** [#7](https://github.com/octo-org/widgets/issues/7) · **Branch:** [`goal/7-o`](https://github.com/octo-org/widgets/tree/goal/7-o) · **PR:** [#12](https://github.com/octo-org/widgets/pull/12)',
    );
    expect(md).toContain('> task ui escalated after 2 attempts');
    expect(md).toContain('- [x] api Add the API ([abcdef0](https://github.com/octo-org/widgets/commit/abcdef0123456789abcdef0123456789abcdef01))');
    expect(md).toContain('- [ ] ui Build the UI — escalated, attempt 2');
    expect(md).toContain('- [ ] docs Write docs — blocked by ui');
    expect(md).toContain('**Budget:** 3/50 iterations · 0 tokens · $1.50 of $5.00');
    expect(md).toContain('### Attempts');
    expect(md).toContain('<summary><code>api</code> attempt 1: passed</summary>');
    expect(md).toContain('<summary><code>ui</code> attempt 1: failed — verification failed</summary>');
    expect(md).toContain('<details open><summary><code>ui</code> attempt 2: failed — verification failed again</summary>');
    expect(md).toContain('src/ui.ts(4,1): error TS2322: still bad');
    expect(md.endsWith('\n')).toBe(true);
    expect(markdownProblems(md)).toEqual([]);
  });

  it('shows the attempts as the check run does, from the same record', () => {
    const { s, v } = goal();
    expect(renderJobSummary(s, v, CTX)).toContain(renderCheckRun(s, v, CTX).text);
  });

  it('without a PR, run note or stop reason, those are left out; before planning it says so; without attempts too', () => {
    const s = snapshot([]);
    s.state = 'DECOMPOSING';
    const md = renderJobSummary(s, [], CTX);
    expect(md).not.toContain('**PR:**');
    expect(md).not.toMatch(/^> /m);
    expect(md).toContain('_Planning…_');
    expect(md).toContain('_No attempt has been recorded yet._');
  });

  it('a PR address that is not http(s) is not linked, and one that is can never end its link early', () => {
    const { s, v } = goal();
    expect(renderJobSummary(s, v, { ...CTX, prUrl: 'javascript:alert(1)' })).not.toContain('**PR:**');
    expect(renderJobSummary(s, v, { ...CTX, prUrl: 'not a url' })).not.toContain('**PR:**');
    const odd = renderJobSummary(s, v, { ...CTX, prUrl: 'https://ghe.example/x/(y)<z>/pull/3' });
    expect(odd).toContain('**PR:** [#3](https://ghe.example/x/%28y%29%3Cz%3E/pull/3)');
  });

  it('a goal id that is not an issue number is quoted, not linked', () => {
    const { s, v } = goal();
    const md = renderJobSummary(s, v, { ...CTX, goalId: 'local-[x](y)' });
    expect(md).toContain('**Goal:** `local-[x](y)`');
    expect(md).not.toContain('**Issue:**');
  });

  it('untrusted text (objective, titles, ids, stop reason, run note, every attempt field) renders inert', () => {
    const s = snapshot([{ id: 'evil', title: EVIL, status: 'escalated', attempts: 1 }]);
    s.objective = `@someone ${EVIL}`;
    s.stopReason = EVIL;
    const entries: AttemptEntry[] = [
      { kind: 'step', command: `echo ${EVIL}`, exitCode: 1, durationMs: 5, timedOut: false, tail: EVIL },
      { kind: 'turn', turn: 1, text: EVIL, tools: [{ name: `write_file${EVIL}`, input: EVIL, result: EVIL, isError: true }] },
      { kind: 'verify', command: EVIL, exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: EVIL },
      { kind: 'checkpoint', sha: `x${EVIL}`, files: 1, insertions: 1, deletions: 0, stat: `${EVIL} +1 -0` },
      { kind: 'truncated', dropped: EVIL },
      { kind: 'end', outcome: 'failed', reason: EVIL, tokens: NO_USAGE, costUsd: 0, durationMs: 5 },
    ];
    const v = groupAttempts(entries.map((entry, i) => ({ seq: i + 1, at: '', taskId: `evil${EVIL}`, attempt: 1, entry })));
    const md = renderJobSummary(s, v, { ...CTX, runNote: EVIL });
    expectInert(md);
    // The heading stays one line: nothing in the objective starts a block of its own.
    expect(md.split('\n')[0]).toMatch(/^## goal-loop: @\u200bsomeone /);
    expect(md.split('\n')[1]).toBe('');
  });

  it.each([['x'], ['é'], ['😀']])("a huge record of %s stays within the step's summary budget, every fence and <details> closed", (ch) => {
    const rows: [string, number, AttemptEntry][] = [];
    const fill = (n: number) => ch.repeat(n);
    const lines = (n: number, w: number) => Array.from({ length: n }, () => fill(w)).join('\n');
    for (let t = 0; t < 40; t++) {
      for (let a = 1; a <= 4; a++) {
        const id = `task-${t}`;
        rows.push([id, a, { kind: 'step', command: fill(400), exitCode: 1, durationMs: 5, timedOut: false, tail: lines(50, 200) }]);
        for (let turn = 1; turn <= 6; turn++)
          rows.push([id, a, { kind: 'turn', turn, text: fill(400), tools: Array.from({ length: 30 }, () => ({ name: fill(70), input: fill(200), result: fill(200), isError: true })) }]);
        rows.push([id, a, { kind: 'verify', command: fill(400), exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: lines(50, 200) }]);
        rows.push([id, a, { kind: 'end', outcome: 'failed', reason: fill(400), tokens: NO_USAGE, costUsd: 0, durationMs: 5 }]);
      }
    }
    const s = snapshot(Array.from({ length: 40 }, (_, t) => ({ id: `task-${t}`, title: fill(200), status: 'escalated' as const, attempts: 4 })));
    s.objective = fill(5000);
    const md = renderJobSummary(s, views(rows), { ...CTX, runNote: fill(5000) });
    expect(bytes(md)).toBeLessThanOrEqual(JOB_SUMMARY_BUDGET_BYTES);
    // Far more than the check run's 64 KiB is shown: the room is used, not thrown away.
    expect(bytes(md)).toBeGreaterThan(JOB_SUMMARY_BUDGET_BYTES / 2);
    expect(markdownProblems(md)).toEqual([]);
    expect(md).toMatch(/left out here for GitHub's size limit|- `task-\d+` attempt \d+: failed/);
    // Each task's last attempt is there: in full while 40 of them fit in the budget (4-byte characters make them too big).
    for (let t = 0; t < 40; t++) {
      if (ch !== '😀') expect(md).toContain(`<summary><code>task-${t}</code> attempt 4: failed`);
      else expect(md).toMatch(new RegExp(`<summary><code>task-${t}</code> attempt 4: failed|- \`task-${t}\` attempt 4: failed`));
    }
    expect(md).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  });

  it("shows each done task's evidence in its checklist, and warns of a verification that passed before its task ran (expect red) only", () => {
    const { s, rows } = evidenceGoal();
    const md = renderJobSummary(s, groupAttempts(rows), CTX);
    expect(md).toContain(`- [x] api Add the API ([a1a1a1a](https://github.com/octo-org/widgets/commit/${SHA.api})) · \`red → green\`\n`);
    expect(md).toMatch(/- \[x\] refactor Split the module \(\[b2b2b2b\]\([^)]+\)\) · `green → green`\n- \[x\] ui /);
    expect(md).toMatch(/- \[x\] ui Build the UI \(\[c3c3c3c\]\([^)]+\)\) · ⚠ `green → green`\n {2}- ⚠ its verification passed before the task ran/);
    expect(md).toMatch(/- \[ \] strict Strict one — escalated, attempt 1 · ⚠\n {2}- ⚠ its verification passed before the task ran/);
    expect(md).toContain("**Baseline** (before the task's change) 🔴 failed `npm test`");
    expect(markdownProblems(md)).toEqual([]);
  });
});
