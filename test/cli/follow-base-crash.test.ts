import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/ledger/open-ledger.js';
import type { PendingEffect } from '../../src/ports/outbox.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { cliProject } from '../helpers/cli-project.js';
import { checkpointCommits, git } from '../helpers/git.js';

/**
 * `goal-loop run --follow-base` killed (SIGKILL) at each crash boundary of the follow-base step,
 * then run again: the goal finishes on main's tip with its 3 checkpoints once each, no task done
 * again, the rewritten branch pushed and reported once. Real CLI processes, a local bare repository.
 */

const GOAL_ID = 'fb-crash';
const BRANCH = `goal/${GOAL_ID}`;
const GOAL = `goal_id: ${GOAL_ID}
objective: three files
tasks:
  - { id: t1, title: One, run: "echo 1 > one.txt", verification: "test -f one.txt" }
  - { id: t2, title: Two, run: "echo 2 > two.txt", verification: "test -f two.txt", dependencies: [t1] }
  - { id: t3, title: Three, run: "echo 3 > three.txt", verification: "test -f three.txt", dependencies: [t2] }
`;

type Project = Awaited<ReturnType<typeof cliProject>>;

function followBase(p: Project, crashAt?: string): Promise<CliResult> {
  return runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--follow-base', '--json'], {
    ...p.env,
    ...(crashAt ? { GOAL_LOOP_CRASH_AT: crashAt } : {}),
  });
}

const tipOf = (p: Project, ref = BRANCH) => git(p.repo.bare, 'rev-parse', `refs/heads/${ref}`);
const hasCommit = (p: Project, sha: string) => {
  try {
    git(p.repo.bare, 'rev-parse', '--verify', '--quiet', `${sha}^{commit}`);
    return true;
  } catch {
    return false;
  }
};
const isAncestor = (p: Project, a: string, b: string) => {
  try {
    git(p.repo.bare, 'merge-base', '--is-ancestor', a, b);
    return true;
  } catch {
    return false;
  }
};
/** The "base followed" report lines the console forge printed. */
const followedLines = (r: CliResult) => r.stderr.split('\n').filter((l) => l.startsWith('base followed')).length;

/** The goal's effects the outbox still holds (pending) or gave up, from the CLI's ledger file. */
async function outbox(p: Project): Promise<{ pending: PendingEffect[]; givenUp: PendingEffect[] }> {
  const store = openSqliteStore(p.env.GOAL_LOOP_DB);
  try {
    const key = { repo: p.repo.bare, goalId: GOAL_ID };
    return { pending: await store.ledger.pendingEffects({ key }), givenUp: await store.ledger.givenUpEffects({ key }) };
  } finally {
    await store.close();
  }
}

/** How many times each task's run step ran, over every run of the goal (the ledger's attempt log). */
async function runStepsPerTask(p: Project): Promise<Record<string, number>> {
  const r = await runCli(['logs', GOAL_ID, '--json'], p.env);
  expect(r.code, r.stderr).toBe(0);
  const counts: Record<string, number> = {};
  for (const line of r.stdout.trim().split('\n')) {
    const e = JSON.parse(line) as { taskId: string; entry: { kind: string } };
    if (e.entry.kind === 'step') counts[e.taskId] = (counts[e.taskId] ?? 0) + 1;
  }
  return counts;
}

/** The goal done (LOOP_COMPLETE, pushed), then an unrelated commit pushed to main. */
async function completedGoalThenMainMoves() {
  const p = await cliProject(GOAL);
  const first = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
  expect(first.code, first.stderr).toBe(0);
  expect(JSON.parse(first.stdout).status).toBe('LOOP_COMPLETE');
  const before = tipOf(p);
  const clone = join(p.root, 'main-clone');
  git(p.root, 'clone', '--quiet', '--branch', 'main', p.repo.bare, clone);
  writeFileSync(join(clone, 'unrelated.txt'), 'moved on main\n');
  git(clone, 'add', '--all');
  git(clone, '-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', 'commit', '--quiet', '-m', 'unrelated change on main');
  git(clone, 'push', '--quiet', 'origin', 'main');
  const onto = tipOf(p, 'main');
  expect(isAncestor(p, onto, before)).toBe(false);
  return { p, before, onto };
}

/** The remote branch is main's tip plus the 3 checkpoints (t1, t2, t3, attempt 1 each), and nothing else. */
function expectFollowed(p: Project, onto: string, before: string): void {
  const tip = tipOf(p);
  expect(tip).not.toBe(before);
  expect(isAncestor(p, onto, tip)).toBe(true);
  // Exactly three commits on top of main, each a checkpoint of its own task.
  expect(git(p.repo.bare, 'rev-list', '--count', `${onto}..${tip}`)).toBe('3');
  expect(checkpointCommits(p.repo.bare, BRANCH).map((c) => [c.task, c.attempt, c.goal])).toEqual([
    ['t1', '1', GOAL_ID],
    ['t2', '1', GOAL_ID],
    ['t3', '1', GOAL_ID],
  ]);
  expect(git(p.repo.bare, 'show', `${tip}:unrelated.txt`)).toBe('moved on main');
  for (const [file, text] of [
    ['one.txt', '1'],
    ['two.txt', '2'],
    ['three.txt', '3'],
  ]) {
    expect(git(p.repo.bare, 'show', `${tip}:${file}`)).toBe(text);
  }
}

/** The rerun after a crash: exit 0, complete, and its result names the branch's checkpoints. */
function expectComplete(p: Project, r: CliResult): void {
  expect(r.signal, r.stderr).toBeNull();
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).not.toMatch(/internal error/);
  const result = JSON.parse(r.stdout);
  expect(result).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 3, tasks_total: 3 });
  expect(result.checkpoints.map((c: { sha: string }) => c.sha)).toEqual(git(p.repo.bare, 'log', '--reverse', '--format=%H', `main..${BRANCH}`).split('\n'));
}

/** After everything: no task's run step ran again, and the outbox did every effect (none waits, none was given up). */
async function expectNothingRedoneOrLeft(p: Project): Promise<void> {
  expect(await runStepsPerTask(p)).toEqual({ t1: 1, t2: 1, t3: 1 });
  const { pending, givenUp } = await outbox(p);
  expect(pending.map((e) => e.kind)).toEqual([]);
  expect(givenUp.map((e) => `${e.kind}: ${e.lastError}`)).toEqual([]);
}

// Four or five CLI runs a test, each a few seconds on a loaded machine: above the 60 s default.
describe('goal-loop run --follow-base killed at its crash boundaries, then run again', () => {
  it('base-followed (replayed locally, nothing recorded or pushed): the branch is untouched; the rerun follows main once', { timeout: 120_000 }, async () => {
    const { p, before, onto } = await completedGoalThenMainMoves();

    const crashed = await followBase(p, 'base-followed');
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    expect(tipOf(p)).toBe(before);
    expect(followedLines(crashed)).toBe(0);
    // Nothing recorded: no push waits in the outbox.
    expect((await outbox(p)).pending).toEqual([]);

    const again = await followBase(p);
    expectComplete(p, again);
    expect(followedLines(again)).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`base followed: rebased onto ${onto.slice(0, 7)}[^\\n]*3 checkpoints replayed, 3 re-verified`));
    expectFollowed(p, onto, before);
    await expectNothingRedoneOrLeft(p);
  });

  it('effect-performed:push (pushed, not marked done, not reported): the rerun pushes again harmlessly and reports once', { timeout: 180_000 }, async () => {
    const { p, before, onto } = await completedGoalThenMainMoves();

    const crashed = await followBase(p, 'effect-performed:push');
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    // The push happened before the kill: the remote branch is already on main.
    expectFollowed(p, onto, before);
    const pushed = tipOf(p);
    expect(followedLines(crashed)).toBe(0);
    const left = (await outbox(p)).pending;
    expect(left.filter((e) => e.kind === 'push').map((e) => e.payload)).toEqual([expect.objectContaining({ taskId: 'follow-base', sha: pushed, lease: before })]);
    expect(left.map((e) => e.kind)).toContain('base_followed');

    // The dead process's claim on the push runs out first (30 s): the rerun waits for it.
    const again = await followBase(p);
    expectComplete(p, again);
    // The same commit: the push was done again (a no-op), and main was not followed a second time.
    expect(tipOf(p)).toBe(pushed);
    expect(followedLines(again)).toBe(1);
    expectFollowed(p, onto, before);
    await expectNothingRedoneOrLeft(p);
  });

  it('effects-recorded:push (recorded, not pushed): the rerun pushes the recorded commit from the kept clone and does not replay again', { timeout: 120_000 }, async () => {
    const { p, before, onto } = await completedGoalThenMainMoves();

    const crashed = await followBase(p, 'effects-recorded:push');
    expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
    expect(tipOf(p)).toBe(before);
    expect(followedLines(crashed)).toBe(0);
    const pushes = (await outbox(p)).pending.filter((e) => e.kind === 'push');
    expect(pushes).toHaveLength(1);
    const recorded = pushes[0]!.payload as { taskId: string; sha: string; lease: string };
    expect(recorded).toMatchObject({ taskId: 'follow-base', lease: before });
    // Only the crashed run's clone has the replayed commits.
    expect(hasCommit(p, recorded.sha)).toBe(false);

    const again = await followBase(p);
    expectComplete(p, again);
    expect(tipOf(p)).toBe(recorded.sha);
    // One report: the recorded one. A second replay would report (and push) again.
    expect(followedLines(again)).toBe(1);
    expectFollowed(p, onto, before);
    await expectNothingRedoneOrLeft(p);
  });
});
