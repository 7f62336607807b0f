import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CommandRequest, Sandbox } from '../../src/ports/sandbox.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { ScriptedAgent } from '../helpers/scripted-agent.js';

const GOAL = {
  goal_id: 'follow',
  objective: 'three changes',
  tasks: [
    { id: 't1', title: 'One', verification: 'test -f one.txt' },
    { id: 't2', title: 'Two', verification: "grep -q 'by the goal' README.md", dependencies: ['t1'] },
    { id: 't3', title: 'Three', verification: 'test "$(cat three.txt)" = "$(cat VERSION)"', dependencies: ['t2'] },
  ],
};
const BRANCH = 'goal/follow';

/** Does each task as a model would, on the tree as it is (t2 edits README's second line; t3 copies VERSION). */
const agent = () =>
  new ScriptedAgent(async ({ task, workspaceDir }) => {
    if (task.id === 't1') await writeFile(join(workspaceDir, 'one.txt'), '1\n');
    if (task.id === 't2') {
      const lines = (await readFile(join(workspaceDir, 'README.md'), 'utf8')).split('\n');
      lines[1] = `${lines[1]} (by the goal)`;
      await writeFile(join(workspaceDir, 'README.md'), lines.join('\n'));
    }
    if (task.id === 't3') await writeFile(join(workspaceDir, 'three.txt'), await readFile(join(workspaceDir, 'VERSION'), 'utf8'));
  });

/** The commands the sandbox ran, in order. */
class CountingSandbox implements Sandbox {
  readonly kind = 'process';
  readonly commands: string[] = [];
  private readonly inner = new ProcessSandbox();
  run(req: CommandRequest) {
    this.commands.push(req.command);
    return this.inner.run(req);
  }
}

/** A goal of 3 tasks at rest (LOOP_COMPLETE) on a pushed branch; then `main` moves. */
async function restingGoal() {
  const sandbox = new CountingSandbox();
  const h = await goalHarness({ sandbox, files: { 'README.md': 'line one\nline two\nline three\n', VERSION: '1\n', 'src/a.txt': 'a\n' } });
  const first = await h.run(GOAL, { agent: agent() });
  expect(first.status, first.stop_reason ?? '').toBe('LOOP_COMPLETE');
  // Every push the remote receives from now on is counted (a real hook in the bare repository).
  const count = join(h.root, 'pushes');
  writeFileSync(join(h.repo.bare, 'hooks', 'pre-receive'), `#!/bin/sh\necho x >> '${count}'\n`);
  chmodSync(join(h.repo.bare, 'hooks', 'pre-receive'), 0o755);
  const pushes = () => (existsSync(count) ? readFileSync(count, 'utf8').split('\n').filter(Boolean).length : 0);
  const onMain = (files: Record<string, string>) => {
    const clone = join(h.root, `main-${Math.random().toString(36).slice(2)}`);
    git(h.root, 'clone', '--quiet', '--branch', 'main', h.repo.bare, clone);
    for (const [path, content] of Object.entries(files)) writeFileSync(join(clone, path), content);
    git(clone, 'add', '--all');
    git(clone, '-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', 'commit', '--quiet', '-m', 'on main');
    git(clone, 'push', '--quiet', 'origin', 'main');
    const sha = git(clone, 'rev-parse', 'HEAD');
    rmPushCount();
    return sha;
  };
  const rmPushCount = () => writeFileSync(count, '');
  const onBranch = (path: string) => git(h.repo.bare, 'show', `${BRANCH}:${path}`);
  sandbox.commands.length = 0;
  return { h, sandbox, pushes, onMain, onBranch };
}

describe('a resting goal follows its base branch (real git, fake-free loop)', () => {
  it('an unrelated commit on main: rebased, all 3 verifications run again, one push, complete again; trailers survive', async () => {
    const { h, sandbox, pushes, onMain, onBranch } = await restingGoal();
    const onto = onMain({ 'src/a.txt': 'a, changed on main\n' });
    const a = agent();
    const result = await h.run(GOAL, { agent: a, followBase: 'rebase' });

    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(a.calls).toHaveLength(0);
    expect(sandbox.commands).toEqual(GOAL.tasks.map((t) => t.verification));
    expect(pushes()).toBe(1);
    expect(git(h.repo.bare, 'merge-base', '--is-ancestor', onto, BRANCH)).toBe('');
    expect(onBranch('src/a.txt')).toBe('a, changed on main');
    expect(checkpointCommits(h.repo.bare, BRANCH).map((c) => [c.task, c.attempt])).toEqual([
      ['t1', '1'],
      ['t2', '1'],
      ['t3', '1'],
    ]);
    expect(h.forge.basesFollowed).toEqual([{ mode: 'rebase', onto, replayed: 3, reverified: 3, repairs: [] }]);
  });

  it('a commit on main that conflicts with t2: t2 is repaired by the agent (told the conflict), t3 done again; checkpointed on the new base', async () => {
    const { h, onMain, onBranch } = await restingGoal();
    const onto = onMain({ 'README.md': 'line one\nline two, reworded on main\nline three\n' });
    const a = agent();
    const result = await h.run(GOAL, { agent: a, followBase: 'rebase' });

    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(a.calls.map((c) => c.task.id)).toEqual(['t2', 't3']);
    expect(a.calls[0]!.previousFailure).toContain('README.md');
    expect(a.calls[0]!.previousFailure).toContain('<<<<<<<');
    expect(onBranch('README.md')).toBe('line one\nline two, reworded on main (by the goal)\nline three');
    expect(git(h.repo.bare, 'merge-base', '--is-ancestor', onto, BRANCH)).toBe('');
    expect(checkpointCommits(h.repo.bare, BRANCH).map((c) => [c.task, c.attempt])).toEqual([
      ['t1', '1'],
      ['t2', '2'],
      ['t3', '2'],
    ]);
    expect(h.forge.basesFollowed.at(-1)).toMatchObject({
      replayed: 1,
      reverified: 1,
      repairs: [
        { taskId: 't2', why: 'conflict' },
        { taskId: 't3', why: 'dropped' },
      ],
    });
  });

  it('a commit on main that makes t3’s verification fail: t3 is taken off the branch, repaired (told the failure) and checkpointed again', async () => {
    const { h, onMain, onBranch } = await restingGoal();
    onMain({ VERSION: '2\n' });
    const a = agent();
    const result = await h.run(GOAL, { agent: a, followBase: 'rebase' });

    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(a.calls.map((c) => c.task.id)).toEqual(['t3']);
    expect(a.calls[0]!.previousFailure).toMatch(/its verification fails there now/);
    expect(onBranch('three.txt')).toBe('2');
    expect(checkpointCommits(h.repo.bare, BRANCH).map((c) => [c.task, c.attempt])).toEqual([
      ['t1', '1'],
      ['t2', '1'],
      ['t3', '2'],
    ]);
    expect(h.forge.basesFollowed.at(-1)).toMatchObject({ replayed: 3, reverified: 2, repairs: [{ taskId: 't3', why: 'verification' }] });
    // Run again: the branch says t3 is its newest commit, the tip (where a check run goes), not the one it repaired.
    const again = await h.run(GOAL, { agent: agent(), followBase: 'rebase' });
    expect(again.status).toBe('LOOP_COMPLETE');
    expect(again.checkpoints.map((c) => c.task_id)).toEqual(['t1', 't2', 't3']);
    expect(again.checkpoints.at(-1)!.sha).toBe(git(h.repo.bare, 'rev-parse', BRANCH));
  });

  it('a repair left undone (the run ended first) is still to do at the next run: the task is not counted done on a tree where it fails', async () => {
    const { h, onMain, onBranch } = await restingGoal();
    onMain({ VERSION: '2\n' });
    // This run's agent cannot do t3: it runs out of retries.
    const idle = new ScriptedAgent(() => undefined);
    const first = await h.run({ ...GOAL, tasks: GOAL.tasks.map((t) => (t.id === 't3' ? { ...t, max_retries: 1 } : t)) }, { agent: idle, followBase: 'rebase' });
    expect(first.status).toBe('ESCALATED');
    expect(checkpointCommits(h.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1', 't2']);
    // Main has not moved since: nothing to follow, and t3 is done now.
    const a = agent();
    const second = await h.run(GOAL, { agent: a, followBase: 'rebase' });
    expect(second.status, second.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(a.calls.map((c) => c.task.id)).toEqual(['t3']);
    expect(onBranch('three.txt')).toBe('2');
  });

  it('a person’s commit after a checkpoint that conflicts: the branch stays as it was, the goal escalates saying why', async () => {
    const { h, onMain } = await restingGoal();
    const clone = join(h.root, 'person');
    git(h.root, 'clone', '--quiet', '--branch', BRANCH, h.repo.bare, clone);
    writeFileSync(join(clone, 'human.txt'), 'mine\n');
    git(clone, 'add', '--all');
    git(clone, '-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', 'commit', '--quiet', '-m', 'by hand');
    git(clone, 'push', '--quiet', 'origin', BRANCH);
    const before = git(h.repo.bare, 'rev-parse', BRANCH);
    onMain({ 'README.md': 'line one\nline two, reworded on main\nline three\n' });
    const result = await h.run(GOAL, { agent: agent(), followBase: 'rebase' });
    expect(result.status).toBe('ESCALATED');
    expect(git(h.repo.bare, 'rev-parse', BRANCH)).toBe(before);
    expect(h.forge.escalations.at(-1)!.last_error).toMatch(/no task's .* A person must rebase the goal branch/s);
    expect(h.forge.basesFollowed).toEqual([]);
  });

  it('follow_base off (the default): the branch stays where it was, nothing runs again', async () => {
    const { h, sandbox, pushes, onMain } = await restingGoal();
    const before = git(h.repo.bare, 'rev-parse', BRANCH);
    onMain({ 'src/a.txt': 'a, changed on main\n' });
    const result = await h.run(GOAL, { agent: agent() });
    expect(result.status).toBe('LOOP_COMPLETE');
    expect(git(h.repo.bare, 'rev-parse', BRANCH)).toBe(before);
    expect(pushes()).toBe(0);
    expect(sandbox.commands).toEqual([]);
  });
});
