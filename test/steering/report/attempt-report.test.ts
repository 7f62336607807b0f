import { describe, expect, it } from 'vitest';
import { AttemptRecorder } from '../../../src/loop/attempt-recorder.js';
import type { AttemptEntry, AttemptLog, AttemptLogEntry } from '../../../src/ports/attempt-log.js';
import type { CommandResult } from '../../../src/ports/sandbox.js';
import { CHECK_OUTPUT_MAX, checkAnnotations, renderCheckRun } from '../../../src/steering/report/check-run.js';
import { COMMENT_MAX, renderEscalation } from '../../../src/steering/report/escalation.js';
import { renderChanges } from '../../../src/steering/report/pull-request.js';
import { groupAttempts } from '../../../src/steering/report/record.js';
import { silentLogger } from '../../helpers/goal-harness.js';
import { evidenceGoal, SHA, snapshot } from './fixtures.js';
import { markdownProblems, prose } from './markdown-structure.js';

const KEY = { repo: 'octo-org/widgets', goalId: '7' };
const CTX = { repoUrl: 'https://github.com/octo-org/widgets', goalId: '7' };
const NO_USAGE = { input: 0, output: 0, cache_read: 0, cache_write: 0 };
const failing = (output: string): CommandResult => ({ exitCode: 1, signal: null, output, outputBytes: output.length, truncated: false, durationMs: 30, timedOut: false, aborted: false });

/** An in-memory attempt log: the recorder writes to it as the loop would. */
function memoryLog(): AttemptLog & { entries: AttemptLogEntry[] } {
  const entries: AttemptLogEntry[] = [];
  return {
    entries,
    async appendAttemptEntry(_key, taskId, attempt, entry) {
      entries.push({ seq: entries.length + 1, at: new Date().toISOString(), taskId, attempt, entry: structuredClone(entry) });
    },
    async listAttemptEntries(_key, f = {}) {
      return entries.filter((e) => (f.taskId === undefined || e.taskId === f.taskId) && (f.attempt === undefined || e.attempt === f.attempt) && (f.afterSeq === undefined || e.seq > f.afterSeq));
    },
  };
}

const EVIL = [
  '```',
  '</details>',
  '<details><summary>owned</summary>',
  '@someone please look',
  '<img src=x onerror=alert(1)>',
  '\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x07link\x1b]8;;\x07',
  '````` and ~~~',
].join('\n');

/** What untrusted text must never become in our markdown, outside fences and code spans. */
function expectInert(md: string): void {
  expect(markdownProblems(md)).toEqual([]);
  const p = prose(md);
  expect(p).not.toMatch(/(?<!\\)<img/);
  expect(p).not.toMatch(/@someone/);
  expect(p).not.toMatch(/<details><summary>owned/);
  expect(p.split('\n').filter((l) => l.includes('</details>') && l !== '</details>')).toEqual([]);
  expect(md).not.toContain('\x1b');
}

describe('the attempt report (check run, escalation comment, PR body)', () => {
  it("a 200-turn attempt at the recorder's bounds, and many attempts, stay within GitHub's limits with every <details> and fence closed", async () => {
    const log = memoryLog();
    const rec = new AttemptRecorder(log, KEY, silentLogger);
    const tasks = ['setup', 'api', 'ui', 'docs'];
    for (const task of tasks) {
      for (let attempt = 1; attempt <= 6; attempt++) {
        await rec.step(task, attempt, `npm run build -- ${'x'.repeat(600)}`, failing(`${'o'.repeat(3000)}\n${EVIL}`));
        // `api` makes many small turns, the others a few huge ones: the record keeps 48 KB of either.
        const big = task !== 'api';
        for (let turn = 1; turn <= 200; turn++) {
          await rec.turn(task, attempt, {
            turn,
            text: big ? `thinking ${EVIL} ${'y'.repeat(5000)}` : `turn ${turn}: ${'s'.repeat(250)}`,
            tools: Array.from({ length: big ? 30 : 3 }, (_, i) => ({
              name: 'run_command',
              input: big ? `cat src/file-${i}.ts ${'`'.repeat(7)} ${'z'.repeat(500)}` : `src/f${i}.ts ${'p'.repeat(90)}`,
              result: big ? `${EVIL}${'r'.repeat(1000)}` : 'ok',
              isError: i % 7 === 0,
            })),
          });
        }
        await rec.verify(task, attempt, 'npm test', failing(`src/${task}.ts(3,1): error TS2322: bad\n${EVIL}\n${'v'.repeat(3000)}`));
        rec.spent(task, attempt, { ...NO_USAGE, input: 1000, output: 200 }, 0.25);
        await rec.end(task, attempt, 'turn_limit', `turn limit reached (200 model requests) ${EVIL}`);
      }
    }
    const views = groupAttempts(await log.listAttemptEntries(KEY));
    expect(views).toHaveLength(24);
    const s = snapshot([
      { id: 'api', status: 'escalated', attempts: 6 },
      { id: 'ui', status: 'escalated', attempts: 6 },
      { id: 'docs', status: 'pending', attempts: 6, dependencies: ['api'] },
    ]);

    const out = renderCheckRun(s, views, CTX);
    expect(out.text.length).toBeLessThanOrEqual(CHECK_OUTPUT_MAX);
    expect(out.summary.length).toBeLessThanOrEqual(CHECK_OUTPUT_MAX);
    expectInert(out.text);
    expectInert(out.summary);
    // The last attempt of each task is there in full; older ones shrink, then are counted out.
    for (const task of tasks) expect(out.text).toContain(`<summary><code>${task}</code> attempt 6: turn limit`);
    expect(out.text).toContain('turn(s) left out here');
    // Older attempts shrink to a line first; the most recent ones stay longest.
    expect(out.text).toContain('- `api` attempt 1: turn limit');
    expect(out.summary).toMatch(/- ❌ `api` escalated \(attempt 6\) · 6 attempt\(s\) recorded, last: turn limit/);

    const e = { task_id: 'api', attempts: 6, last_error: EVIL.repeat(50), also_escalated: ['ui'], blocked: ['docs'] };
    const comment = renderEscalation(s, e, views, { ...CTX, mention: '@alice' });
    expect(comment.length).toBeLessThanOrEqual(COMMENT_MAX - 200);
    expectInert(comment.replace('@alice', ''));
    expect(comment).toContain('<summary><code>api</code> attempt 6');
    expect(comment).toContain('<summary><code>ui</code> attempt 6');
    expect(comment).toContain('**What failed:** `npm run build -- xxx');
  });

  it('annotations come from the last failing verification of each task not verified', () => {
    const verify = (tail: string, passed = false): AttemptEntry => ({ kind: 'verify', command: 'npx tsc', exitCode: passed ? 0 : 2, durationMs: 5, timedOut: false, passed, tail });
    const end = (outcome: 'failed' | 'passed'): AttemptEntry => ({ kind: 'end', outcome, reason: outcome, tokens: NO_USAGE, costUsd: 0, durationMs: 5 });
    const rows: [string, number, AttemptEntry][] = [
      ['api', 1, verify('src/api.ts(1,1): error TS1: first try')],
      ['api', 1, end('failed')],
      ['api', 2, verify('/ws/src/api.ts(2,1): error TS1: second try\n/elsewhere/x.ts(1,1): error TS1: outside')],
      ['api', 2, end('failed')],
      ['ui', 1, verify('src/ui.ts(5,1): error TS1: fixed later')],
      ['ui', 1, end('failed')],
      ['ui', 2, verify('', true)],
      ['ui', 2, end('passed')],
      ['final-gate', 1, verify('src/gate.ts:3:1 - error TS2: gate')],
      ['final-gate', 1, end('failed')],
    ];
    const views = groupAttempts(rows.map(([taskId, attempt, entry], i) => ({ seq: i + 1, at: '', taskId, attempt, entry })));
    const s = snapshot([
      { id: 'api', status: 'escalated', attempts: 2 },
      { id: 'ui', status: 'done', attempts: 2 },
    ]);
    expect(checkAnnotations(s, views, '/ws')).toEqual([
      { path: 'src/api.ts', start_line: 2, end_line: 2, start_column: 1, end_column: 1, annotation_level: 'failure', message: 'error TS1: second try' },
      { path: 'src/gate.ts', start_line: 3, end_line: 3, start_column: 1, end_column: 1, annotation_level: 'failure', message: 'error TS2: gate' },
    ]);
  });

  it('past what fits in lines, the oldest attempts are left out with a line saying how many and where the rest is', () => {
    const entries: AttemptLogEntry[] = [];
    for (let t = 0; t < 150; t++) {
      for (let attempt = 1; attempt <= 3; attempt++) {
        const end: AttemptEntry = { kind: 'end', outcome: 'failed', reason: `verification failed ${'w'.repeat(120)}`, tokens: NO_USAGE, costUsd: 0, durationMs: 5 };
        const verify: AttemptEntry = { kind: 'verify', command: 'npm test', exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: 'x\n'.repeat(40) };
        for (const entry of [verify, end]) entries.push({ seq: entries.length + 1, at: '', taskId: `task-${t}`, attempt, entry });
      }
    }
    const views = groupAttempts(entries);
    const s = snapshot(Array.from({ length: 150 }, (_, t) => ({ id: `task-${t}`, status: 'escalated' as const, attempts: 3 })));
    const out = renderCheckRun(s, views, CTX);
    expect(out.text.length).toBeLessThanOrEqual(CHECK_OUTPUT_MAX);
    expect(out.summary.length).toBeLessThanOrEqual(CHECK_OUTPUT_MAX);
    expect(markdownProblems(out.text)).toEqual([]);
    expect(out.text).toMatch(/_\d+ attempt\(s\) left out here for GitHub's size limit; the whole record: `goal-loop logs 7`_/);
    // The last attempt of the most recent task is kept whole.
    expect(out.text).toContain('<summary><code>task-149</code> attempt 3');
  });

  it('untrusted text in every field renders inert: fences longer than any backtick run, no HTML, no mention, no escape sequence', () => {
    const entries: AttemptEntry[] = [
      { kind: 'step', command: `echo ${EVIL}`, exitCode: 1, durationMs: 5, timedOut: false, tail: EVIL },
      { kind: 'turn', turn: 1, text: EVIL, tools: [{ name: `write_file${EVIL}`, input: EVIL, result: EVIL, isError: true }] },
      { kind: 'verify', command: EVIL, exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: EVIL },
      { kind: 'checkpoint', sha: `x${EVIL}`, files: 1, insertions: 1, deletions: 0, stat: `${EVIL} +1 -0` },
      { kind: 'truncated', dropped: EVIL },
      { kind: 'end', outcome: 'failed', reason: EVIL, tokens: NO_USAGE, costUsd: 0, durationMs: 5 },
    ];
    const views = groupAttempts(entries.map((entry, i) => ({ seq: i + 1, at: '', taskId: 'evil', attempt: 1, entry })));
    const s = snapshot([{ id: 'evil', status: 'escalated', attempts: 1 }]);
    const out = renderCheckRun(s, views, CTX);
    expectInert(out.text);
    expectInert(out.summary);
    expect(out.text).toContain('``````text\n'); // longer than the 5-backtick run inside
    const comment = renderEscalation(s, { task_id: 'evil', attempts: 1, last_error: EVIL }, views, { ...CTX, mention: '@alice' });
    expectInert(comment.replace('@alice', ''));
    const changes = renderChanges(snapshot([{ id: 'evil', status: 'done', attempts: 1, checkpointSha: 'a'.repeat(40) }]), views, CTX);
    expectInert(changes);
  });

  it('the PR body lists each done task with its checkpoint commit and what it changed', () => {
    const sha = 'abcdef0123456789abcdef0123456789abcdef01';
    const entries: AttemptEntry[] = [
      { kind: 'verify', command: 'npm test', exitCode: 0, durationMs: 5, timedOut: false, passed: true, tail: 'ok' },
      { kind: 'checkpoint', sha, files: 5, insertions: 40, deletions: 2, stat: 'src/a.ts +10 -1\nsrc/b.ts +10 -1\nREADME.md +10 -0\nimg.png bin\nsrc/c.ts +10 -0' },
      { kind: 'end', outcome: 'passed', reason: '5 file(s) changed, +40 -2', tokens: NO_USAGE, costUsd: 0, durationMs: 5 },
    ];
    const views = groupAttempts(entries.map((entry, i) => ({ seq: i + 1, at: '', taskId: 'api', attempt: 2, entry })));
    const md = renderChanges(
      snapshot([
        { id: 'api', status: 'done', attempts: 2, checkpointSha: sha },
        { id: 'ui', status: 'pending' },
      ]),
      views,
      CTX,
    );
    expect(md).toBe(`### Changes per task\n\n- \`api\` ([\`abcdef0\`](https://github.com/octo-org/widgets/commit/${sha})): 5 file(s), +40 -2 — \`src/a.ts\`, \`src/b.ts\`, \`README.md\` and 2 more`);
  });

  it("the PR body shows each done task's evidence, and warns of a verification that passed before its task ran (expect red), not of one expected green", () => {
    const { s, rows } = evidenceGoal();
    const md = renderChanges(s, groupAttempts(rows), CTX);
    const line = (id: string) => md.split('\n').find((l) => l.startsWith(`- \`${id}\``));
    expect(line('api')).toContain(' · `red → green` · 1 file(s), +3 -1');
    expect(line('refactor')).toContain(' · `green → green` (as expected: `expect: green`) · 1 file(s)');
    expect(line('refactor')).not.toContain('⚠');
    expect(line('ui')).toContain(' · ⚠ `green → green`: its verification passed before the task ran · 1 file(s)');
    expect(line('docs')).toContain(' · `unchecked` · 1 file(s)');
    // A record from before evidence: the line as it was.
    expect(line('old')).toBe(`- \`old\` ([\`e5e5e5e\`](https://github.com/octo-org/widgets/commit/${SHA.old})): 1 file(s), +3 -1 — \`src/x.ts\``);
    // Tasks not done are not listed (their warning is in the check run and the status comment).
    expect(line('strict')).toBeUndefined();
    expect(md).toContain('> [!WARNING]\n> 1 task(s) marked ⚠ below: the verification passed before the task ran');
    expect(md).toContain("**Evidence** — `red → green`: its verification failed before the task's change and passes with it;");
    expect(markdownProblems(md)).toEqual([]);
  });

  it('the PR body has no warning when no done task passed before it ran', () => {
    const { s, rows } = evidenceGoal();
    const md = renderChanges(s, groupAttempts(rows.filter((r) => r.taskId !== 'ui')), CTX);
    expect(md).not.toContain('⚠');
    expect(md).not.toContain('[!WARNING]');
  });

  it("the check run states each task's evidence, and a verification that passed before its task ran in its title and at the top of its summary", () => {
    const { s, rows } = evidenceGoal();
    const out = renderCheckRun(s, groupAttempts(rows), CTX);
    expect(out.title).toBe('5/7 tasks verified, ⚠ 1 passed before it ran');
    const lines = out.summary.split('\n');
    expect(lines[0]).toBe('> [!WARNING]');
    expect(lines[1]).toBe("> The verification of `ui`, `strict` passed before the task ran, so it cannot show that the task's change works: marked ⚠ below.");
    const line = (id: string) => lines.find((l) => l.includes(`\`${id}\``) && l.startsWith('- '))!;
    expect(line('api')).toMatch(/^- ✅ `api` done \(attempt 1\) · `red → green` · 1 attempt/);
    expect(line('refactor')).toContain('· `green → green` (as expected: `expect: green`) ·');
    expect(line('ui')).toContain('· ⚠ `green → green`: its verification passed before the task ran ·');
    expect(line('docs')).toContain('· `unchecked` ·');
    expect(line('strict')).toMatch(/^- ❌ `strict` escalated \(attempt 1\) · ⚠ its verification passed before the task ran · /);
    expect(line('next')).toBe('- ⏳ `next` pending');
    expect(out.summary).toContain('**Evidence** — ');
    // The attempts say it too: the baseline before the change, the evidence at the checkpoint.
    expect(out.text).toContain("**Baseline** (before the task's change) 🔴 failed `npm test` · exit 1 · 1.2 s — as expected: the task must make it pass\n\n```text\nFAIL src/api.test.ts");
    expect(out.text).toContain("**Baseline** (before the task's change) 🟢 passed `npm test` · exit 0 · 1.2 s · the same verification on the same tree, not run again — as expected (`expect: green`)");
    expect(out.text).toContain(
      "**Baseline** (before the task's change) 🟢 passed `npm test` · exit 0 · 1.2 s — ⚠ its verification passed before the task ran, so it cannot show that the task's change works\n",
    );
    expect(out.text).toContain('(`verification_baseline: require_red`: the task is not run)');
    expect(out.text).toContain(`) · \`red → green\`: its verification failed before the task's change and passes with it · 1 file(s)`);
    expectInert(out.summary);
    expectInert(out.text);
  });

  it('a check run whose tasks expected their green baseline has no warning', () => {
    const { s, rows } = evidenceGoal();
    const out = renderCheckRun({ ...s, tasks: s.tasks.filter((t) => t.id !== 'ui' && t.id !== 'strict') }, groupAttempts(rows.filter((r) => r.taskId !== 'ui' && r.taskId !== 'strict')), CTX);
    expect(out.title).toBe('4/5 tasks verified');
    expect(out.summary).not.toContain('⚠');
    expect(out.summary).not.toContain('[!WARNING]');
  });

  it('the escalation comment of a task stopped by its green baseline says why', () => {
    const { s, rows } = evidenceGoal();
    const comment = renderEscalation(s, { task_id: 'strict', attempts: 0, cause: 'passes_before', last_error: 'its verification passed before the task ran' }, groupAttempts(rows), {
      ...CTX,
      mention: '@alice',
    });
    expect(comment).toContain('the task **strict** did not run: its verification already passes before the task;');
    expect(comment).toContain('<summary>Why it did not run</summary>');
    expect(comment).toContain('What was tried: nothing.');
    expect(comment).toContain(
      "**Baseline** (before the task's change) 🟢 passed `npm test` — ⚠ its verification passed before the task ran, so it cannot show that the task's change works (`verification_baseline: require_red`: the task is not run)",
    );
  });

  it('a baseline with untrusted text in every field renders inert', () => {
    const entries: AttemptEntry[] = [
      { kind: 'baseline', command: EVIL, exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: EVIL, expect: 'red', policy: 'warn' },
      { kind: 'checkpoint', sha: 'a'.repeat(40), files: 1, insertions: 1, deletions: 0, stat: 'x +1 -0', evidence: EVIL as never },
      { kind: 'end', outcome: 'failed', reason: 'x', tokens: NO_USAGE, costUsd: 0, durationMs: 5 },
    ];
    const views = groupAttempts(entries.map((entry, i) => ({ seq: i + 1, at: '', taskId: 'evil', attempt: 1, entry })));
    const out = renderCheckRun(snapshot([{ id: 'evil', status: 'done', attempts: 1, checkpointSha: 'a'.repeat(40) }]), views, CTX);
    expectInert(out.text);
    expectInert(out.summary);
    const changes = renderChanges(snapshot([{ id: 'evil', status: 'done', attempts: 1, checkpointSha: 'a'.repeat(40) }]), views, CTX);
    expectInert(changes);
    // An evidence value that is not one of the three is not shown at all.
    expect(changes).not.toContain('someone');
    expect(out.summary).not.toContain('someone');
  });
});
