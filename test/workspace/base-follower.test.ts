import { existsSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

const BRANCH = 'goal/g1';

/** A goal branch of three checkpoints (t1: one.txt, t2: an edit of README.md, t3: three.txt), pushed; then `main` moves. */
async function goalBranch() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'), { 'README.md': 'line one\nline two\nline three\n', 'src/a.txt': 'a\n' });
  const make = () => new GitWorkspace({ remote: repo.bare, dir: join(root, 'ws'), goalId: 'g1', branch: BRANCH, identity: { name: 'goal-loop', email: 'bot@example.com' } });
  const ws = make();
  await ws.prepare();
  await writeFile(join(ws.dir, 'one.txt'), '1\n');
  await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'One', attempt: 1 });
  await writeFile(join(ws.dir, 'README.md'), 'line one\nline two, by the goal\nline three\n');
  await ws.checkpoint({ goalId: 'g1', taskId: 't2', title: 'Two', attempt: 2 });
  await writeFile(join(ws.dir, 'three.txt'), '3\n');
  await ws.checkpoint({ goalId: 'g1', taskId: 't3', title: 'Three', attempt: 1 });
  /** A person's commit on `main` (or on another branch), pushed. */
  const commitOn = (branch: string, files: Record<string, string>, message = 'a person’s change') => {
    const clone = join(root, `clone-${Math.random().toString(36).slice(2)}`);
    git(root, 'clone', '--quiet', '--branch', branch, repo.bare, clone);
    for (const [path, content] of Object.entries(files)) writeFileSync(join(clone, path), content);
    git(clone, 'add', '--all');
    git(clone, '-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', 'commit', '--quiet', '-m', message);
    git(clone, 'push', '--quiet', 'origin', branch);
    return git(clone, 'rev-parse', 'HEAD');
  };
  const remoteTip = () => git(repo.bare, 'rev-parse', `refs/heads/${BRANCH}`);
  const oldTip = remoteTip();
  return { root, repo, make, commitOn, remoteTip, oldTip };
}

/** A new run's workspace on the goal branch (prepare), asked to follow the base. */
async function follow(s: Awaited<ReturnType<typeof goalBranch>>, mode: 'rebase' | 'merge' = 'rebase') {
  const ws = s.make();
  await ws.prepare();
  const followed = await ws.followBase(mode, ['t1', 't2', 't3']);
  return { ws, followed };
}

describe('following the base branch (real git)', () => {
  it('an unrelated commit on main: every checkpoint replayed onto it, trailers and authors kept, one push under a lease', async () => {
    const s = await goalBranch();
    const onto = s.commitOn('main', { 'src/a.txt': 'a, changed on main\n' });
    const { ws, followed } = await follow(s);

    expect(followed).toBeDefined();
    expect(followed!.onto).toBe(onto);
    expect(followed!.mode).toBe('rebase');
    expect(followed!.replayed.map((r) => r.taskId)).toEqual(['t1', 't2', 't3']);
    expect(followed!.conflict).toBeUndefined();
    expect(followed!.checkpoints.map((c) => [c.taskId, c.attempt])).toEqual([
      ['t1', 1],
      ['t2', 2],
      ['t3', 1],
    ]);
    expect(followed!.push).toEqual({ sha: await ws.head(), lease: s.oldTip });
    // Nothing on the remote until the push.
    expect(s.remoteTip()).toBe(s.oldTip);
    await ws.publish(followed!.push!);
    expect(s.remoteTip()).toBe(followed!.push!.sha);
    expect(git(s.repo.bare, 'merge-base', '--is-ancestor', onto, `refs/heads/${BRANCH}`)).toBe('');
    expect(checkpointCommits(s.repo.bare, BRANCH).map((c) => [c.task, c.attempt, c.goal])).toEqual([
      ['t1', '1', 'g1'],
      ['t2', '2', 'g1'],
      ['t3', '1', 'g1'],
    ]);
    expect(git(ws.dir, 'show', 'HEAD:src/a.txt')).toBe('a, changed on main');
    expect(git(ws.dir, 'show', 'HEAD:README.md')).toContain('by the goal');
  });

  it('a commit on main that conflicts with t2: t1 replayed, t2 the conflict (files, markers, its old change), t3 dropped', async () => {
    const s = await goalBranch();
    s.commitOn('main', { 'README.md': 'line one\nline two, by a person\nline three\n' });
    const { ws, followed } = await follow(s);

    expect(followed!.replayed.map((r) => r.taskId)).toEqual(['t1']);
    expect(followed!.conflict).toMatchObject({ taskId: 't2', files: ['README.md'] });
    expect(followed!.conflict!.detail).toContain('<<<<<<<');
    expect(followed!.conflict!.detail).toContain('by the goal');
    expect(followed!.dropped).toEqual(['t3']);
    expect(followed!.checkpoints.map((c) => c.taskId)).toEqual(['t1']);
    // The tree is the base with t1 on it, nothing half-applied, no cherry-pick under way.
    expect(git(ws.dir, 'status', '--porcelain')).toBe('');
    expect(git(ws.dir, 'show', 'HEAD:README.md')).toContain('by a person');
    expect(existsSync(join(ws.dir, '.git', 'CHERRY_PICK_HEAD'))).toBe(false);
  }, 20_000);

  it('follow_base: merge: one merge commit on top, the checkpoints unchanged', async () => {
    const s = await goalBranch();
    const before = checkpointCommits(s.repo.bare, BRANCH);
    const onto = s.commitOn('main', { 'src/a.txt': 'a, changed on main\n' });
    const { ws, followed } = await follow(s, 'merge');
    expect(followed!.mode).toBe('merge');
    expect(followed!.replayed.map((r) => r.taskId)).toEqual(['t1', 't2', 't3']);
    expect(git(ws.dir, 'rev-parse', 'HEAD^1')).toBe(s.oldTip);
    expect(git(ws.dir, 'rev-parse', 'HEAD^2')).toBe(onto);
    await ws.publish(followed!.push!);
    expect(checkpointCommits(s.repo.bare, BRANCH)).toEqual(before);
  });

  it('a merge that conflicts is done as a rebase, so that the conflicting task can be repaired on the new base', async () => {
    const s = await goalBranch();
    s.commitOn('main', { 'README.md': 'line one\nline two, by a person\nline three\n' });
    const { followed } = await follow(s, 'merge');
    expect(followed!.mode).toBe('rebase');
    expect(followed!.conflict?.taskId).toBe('t2');
    expect(followed!.note).toMatch(/merge .* conflicted: rebased instead/);
  });

  it('a person’s commit on the goal branch is replayed too; nothing to follow when the base has not moved', async () => {
    const s = await goalBranch();
    expect((await follow(s)).followed).toBeUndefined();
    s.commitOn(BRANCH, { 'human.txt': 'mine\n' }, 'a fix by hand');
    s.commitOn('main', { 'src/a.txt': 'a, changed on main\n' });
    const { ws, followed } = await follow(s);
    expect(followed!.replayed.map((r) => r.taskId)).toEqual(['t1', 't2', 't3']);
    expect(git(ws.dir, 'log', '-1', '--format=%s %an')).toBe('a fix by hand Ada');
    expect(git(ws.dir, 'show', 'HEAD:src/a.txt')).toBe('a, changed on main');
  });

  it('a person’s commit that would be left out (after a conflicting checkpoint), or that conflicts itself: the branch stays as it was, nothing to push', async () => {
    const s = await goalBranch();
    s.commitOn(BRANCH, { 'human.txt': 'mine\n' }, 'a fix by hand');
    s.commitOn('main', { 'README.md': 'line one\nline two, by a person\nline three\n' });
    const { ws, followed } = await follow(s);
    expect(followed!.conflict).toMatchObject({ taskId: 't2', files: ['README.md'] });
    expect(followed!.push).toBeUndefined();
    expect(await ws.head()).toBe(s.remoteTip());
    expect(followed!.checkpoints.map((c) => c.taskId)).toEqual(['t1', 't2', 't3']);

    const t = await goalBranch();
    t.commitOn(BRANCH, { 'src/a.txt': 'a, by hand\n' }, 'a person edits a file main edits too');
    t.commitOn('main', { 'src/a.txt': 'a, on main\n' });
    const other = await follow(t);
    expect(other.followed!.push).toBeUndefined();
    expect(other.followed!.conflict?.taskId).toBeUndefined();
  });

  it('a commit naming a task the goal does not have counts as a person’s', async () => {
    const s = await goalBranch();
    s.commitOn('main', { 'src/a.txt': 'a, changed on main\n' });
    const ws = s.make();
    await ws.prepare();
    const followed = await ws.followBase('rebase', ['t1', 't3']);
    expect(followed!.replayed.map((r) => r.taskId)).toEqual(['t1', 't3']);
    expect(followed!.commits.map((c) => c.taskId)).toEqual(['t1', undefined, 't3']);
  });

  it('a push someone made to the goal branch meanwhile is never overwritten: the rewritten branch’s push is refused', async () => {
    const s = await goalBranch();
    s.commitOn('main', { 'src/a.txt': 'a, changed on main\n' });
    const { ws, followed } = await follow(s);
    const theirs = s.commitOn(BRANCH, { 'human.txt': 'mine\n' }, 'pushed meanwhile');
    await expect(ws.publish(followed!.push!)).rejects.toThrow(/moved on the remote/);
    expect(s.remoteTip()).toBe(theirs);
  });
});
