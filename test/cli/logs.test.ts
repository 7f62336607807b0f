import { describe, expect, it } from 'vitest';
import { renderAttemptEntries } from '../../src/cli/render-attempts.js';
import type { AttemptLogEntry } from '../../src/ports/attempt-log.js';
import { runCli, startCli } from '../helpers/cli.js';
import { cliProject } from '../helpers/cli-project.js';
import { baselineEntry, evidenceGoal } from '../steering/report/fixtures.js';

const project = (goalYaml: string) => cliProject(goalYaml);

const RETRIED = `goal_id: logs-retry
objective: a task that passes on its second attempt
tasks:
  - id: flaky
    title: Passes the second time
    run: 'if [ "$GOAL_ATTEMPT" -gt 1 ]; then echo ok > flaky.txt; fi'
    verification: 'test -f flaky.txt || { printf "\\302\\233[31m\\n"; printf "\\033[1;31mFAIL\\033[0m \\033]8;;https://x.test\\007link\\033]8;;\\007\\n"; echo "src/flaky.test.ts:3:7 expected the file"; exit 1; }'
    max_retries: 2
`;

describe('goal-loop logs', () => {
  it('prints each attempt from the ledger: the step, the failed verification with its tail, the checkpoint, why it ended', async () => {
    const p = await project(RETRIED);
    const run = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(run.code, run.stderr).toBe(0);

    const r = await runCli(['logs', 'logs-retry'], p.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/── flaky · attempt 1 ─+\n/);
    expect(r.stdout).toContain('✘ verify test -f flaky.txt');
    expect(r.stdout).toContain('    src/flaky.test.ts:3:7 expected the file');
    expect(r.stdout).toMatch(/= failed: verification `test -f flaky\.txt/);
    expect(r.stdout).toMatch(/── flaky · attempt 2 ─+\n/);
    // The evidence follows the counts when the loop records it (` · red → green: …`).
    expect(r.stdout).toMatch(/● checkpoint [0-9a-f]{12} {2}1 file \+1 -0(?: · [^\n]+)?\n {4}flaky\.txt \+1 -0/);
    expect(r.stdout).toContain('= passed: 1 file(s) changed, +1 -0');

    // --json: the output's escape sequences (colours, a hyperlink, an 8-bit CSI a terminal would obey) are not data.
    const all = await runCli(['logs', 'logs-retry', '--json'], p.env);
    expect(all.stdout).not.toMatch(/[\u0080-\u009f]/);
    const failed = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AttemptLogEntry)
      .find((e) => e.entry.kind === 'verify' && !e.entry.passed)!;
    const tail = failed.entry.kind === 'verify' ? failed.entry.tail : '';
    expect(tail).toContain('FAIL link\nsrc/flaky.test.ts:3:7 expected the file');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test asserts no escape sequence is left
    expect(tail).not.toMatch(/[\u001b\u009b\u009d]|\[31m|\[0m|8;;/);

    const only = await runCli(['logs', 'logs-retry', '--task', 'flaky', '--attempt', '2', '--json'], p.env);
    expect(only.code, only.stderr).toBe(0);
    const lines = only.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AttemptLogEntry);
    expect(lines.every((e) => e.taskId === 'flaky' && e.attempt === 2)).toBe(true);
    expect(lines.map((e) => e.entry.kind)).toEqual(['step', 'verify', 'checkpoint', 'end']);
  });

  it('refuses an unknown goal, a task the goal does not have and a bad --attempt with one line each, exit 1', async () => {
    const p = await project(RETRIED);
    const missing = await runCli(['logs', 'nope'], p.env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('the ledger');
    await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    const unknown = await runCli(['logs', 'nope'], p.env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('goal-loop: no goal "nope" in the ledger (see `goal-loop status`)');
    const typo = await runCli(['logs', 'logs-retry', '--task', 'flakey'], p.env);
    expect(typo.code).toBe(1);
    expect(typo.stdout).toBe('');
    expect(typo.stderr.trim()).toBe('goal-loop: goal "logs-retry" has no task "flakey" (did you mean flaky?); its tasks: flaky, setup, final-gate');
    const setup = await runCli(['logs', 'logs-retry', '--task', 'setup'], p.env);
    expect(setup.code, setup.stderr).toBe(0);
    const bad = await runCli(['logs', 'logs-retry', '--attempt', 'two'], p.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--attempt must be a whole number');
  });

  it('--follow on a goal another process runs shows its attempts as they land, and ends when the goal rests', async () => {
    const p = await project(`goal_id: logs-follow
objective: three slow tasks
tasks:
  - { id: t1, title: One, run: "sleep 1; echo 1 > t1.txt", verification: "test -f t1.txt" }
  - { id: t2, title: Two, run: "sleep 1; echo 2 > t2.txt", verification: "test -f t2.txt", dependencies: [t1] }
  - { id: t3, title: Three, run: "sleep 1; echo 3 > t3.txt", verification: "test -f t3.txt", dependencies: [t2] }
`);
    const run = startCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    let runEnded = false;
    void run.done.then(() => (runEnded = true));
    // The goal exists in the ledger once the run has started it.
    for (let i = 0; i < 200 && (await runCli(['logs', 'logs-follow'], p.env)).code !== 0; i++) await new Promise((r) => setTimeout(r, 100));

    const follow = startCli(['logs', 'logs-follow', '--follow'], p.env);
    let seenWhileRunning = false;
    const t1Ended = new Promise<void>((resolve) => {
      let text = '';
      follow.child.stdout!.on('data', (c: Buffer) => {
        text += c.toString();
        if (/── t1 · attempt 1[\s\S]*= passed/.test(text)) {
          seenWhileRunning ||= !runEnded;
          resolve();
        }
      });
    });
    await t1Ended;
    const [ran, followed] = await Promise.all([run.done, follow.done]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(followed.code, followed.stderr).toBe(0);
    expect(seenWhileRunning).toBe(true); // t1's end was printed before the run was over
    for (const t of ['t1', 't2', 't3']) expect(followed.stdout).toContain(`── ${t} · attempt 1`);
    expect(followed.stdout.trimEnd().split('\n').at(-1)).toBe('logs-follow is LOOP_COMPLETE');
  });
});

describe('renderAttemptEntries', () => {
  it('attack: output with terminal escape sequences prints inert (no colour, no title, no cursor move)', () => {
    const entries: AttemptLogEntry[] = [
      {
        seq: 1,
        at: '',
        taskId: 't\x1b]0;pwned\x07',
        attempt: 1,
        entry: { kind: 'verify', command: 'npm test\x1b[2J', exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail: 'FAIL \x1b[31mred\x1b[0m\r\x1b[1Ahidden\x07' },
      },
      { seq: 2, at: '', taskId: 't', attempt: 1, entry: { kind: 'turn', turn: 1, text: 'ok\x1b[8m', tools: [{ name: 'run_command', input: '"rm\x1b[K"', result: 'exit 0\x9b', isError: false }] } },
    ];
    const text = renderAttemptEntries(entries);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test asserts no control character reaches the terminal
    expect(text).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]/);
    expect(text).toContain('FAIL red');
    expect(text).toContain('hidden');
  });

  it("shows the baseline before a task's change against what the task expects, and each checkpoint's evidence in words", () => {
    const { rows } = evidenceGoal();
    const text = renderAttemptEntries(rows);
    const after = (head: string) => text.split('\n')[text.split('\n').findIndex((l) => l.startsWith(head)) + 1];
    expect(text).toContain('── api · attempt 1');
    expect(text).toContain("  ○ baseline (before the task's change) npm test  failed, exit 1 · 1.2 s\n    as expected (expect: red): the task must make it pass\n");
    expect(text).toContain("  ● checkpoint a1a1a1a1a1a1  1 file +3 -1 · red → green: its verification failed before the task's change and passes with it\n");
    // expect: green: green before is what the task wants, no warning.
    expect(text).toContain(
      "  ○ baseline (before the task's change) npm test  passed, exit 0 · 1.2 s · same verification on the same tree, not run again\n    as expected (expect: green): the task must keep it passing\n",
    );
    expect(text).toContain("● checkpoint b2b2b2b2b2b2  1 file +3 -1 · green → green: its verification passed before the task's change too\n");
    // expect: red: green before is the warning.
    const ui = text.slice(text.indexOf('── ui · attempt 1'));
    expect(ui).toMatch(
      /^── ui · attempt 1 ─+\n {2}! baseline \(before the task's change\) npm test {2}passed, exit 0 · 1\.2 s\n {4}warning: its verification passed before the task ran, so it cannot show that the task's change works \(expect: red\)\n/,
    );
    expect(after('── strict · attempt 1')).toContain('! baseline');
    expect(text).toContain('(expect: red); verification_baseline: require_red, so the task is not run');
    expect(text).toContain("● checkpoint d4d4d4d4d4d4  1 file +3 -1 · unchecked: its verification was not run before the task's change (verification_baseline: off)\n");
    // A checkpoint from before evidence, or with a value that is not one, shows none.
    expect(text).toContain('● checkpoint e5e5e5e5e5e5  1 file +3 -1\n');
    const bogus = renderAttemptEntries([
      { seq: 1, at: '', taskId: 't', attempt: 1, entry: { kind: 'checkpoint', sha: 'f'.repeat(40), files: 1, insertions: 1, deletions: 0, stat: 'x +1 -0', evidence: 'bogus\x1b[2J' as never } },
    ]);
    expect(bogus).toContain('  ● checkpoint ffffffffffff  1 file +1 -0\n');
    expect(bogus).not.toMatch(/bogus|-0 ·/);
    expect(text.match(/warning:/g)).toHaveLength(2);
  });

  it('a baseline that fails though the task expects it to pass shows why (its output)', () => {
    const text = renderAttemptEntries([{ seq: 1, at: '', taskId: 't', attempt: 1, entry: baselineEntry(false, 'green') }]);
    expect(text).toContain(
      "  ! baseline (before the task's change) npm test  failed, exit 1 · 1.2 s\n    though the task expects it to pass (expect: green)\n    FAIL src/api.test.ts\n    expected 200, got 404\n",
    );
  });
});
