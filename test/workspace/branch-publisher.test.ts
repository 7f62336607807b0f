import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { PushRejectedError } from '../../src/ports/workspace.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

async function setup() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  // Every push the remote receives is counted (a real hook in the bare repository).
  const count = join(root, 'pushes');
  writeFileSync(join(repo.bare, 'hooks', 'pre-receive'), `#!/bin/sh\necho x >> '${count}'\n`);
  chmodSync(join(repo.bare, 'hooks', 'pre-receive'), 0o755);
  const make = () => new GitWorkspace({ remote: repo.bare, dir: join(root, 'ws'), goalId: 'g1', branch: 'goal/g1', identity: { name: 'goal-loop', email: 'bot@example.com' } });
  const pushes = () => (existsSync(count) ? readFileSync(count, 'utf8').split('\n').filter(Boolean).length : 0);
  const remoteTip = () => {
    try {
      return git(repo.bare, 'rev-parse', '--verify', '--quiet', 'refs/heads/goal/g1');
    } catch {
      return undefined;
    }
  };
  return { root, repo, make, pushes, remoteTip };
}

const input = (taskId: string) => ({ goalId: 'g1', taskId, title: taskId.toUpperCase(), attempt: 1 });

describe('checkpoints committed now, pushed off the critical path (commit, publish)', () => {
  it('commit leaves the remote alone; one publish carries every checkpoint committed meanwhile, and the others find it done', async () => {
    const s = await setup();
    const ws = s.make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1\n');
    const one = await ws.commit(input('one'));
    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    const two = await ws.commit(input('two'));
    expect(s.remoteTip()).toBeUndefined();
    expect(one.push).toEqual({ sha: one.sha, lease: '' });
    expect(two.push).toEqual({ sha: two.sha, lease: one.sha });

    await ws.publish(one.push!);
    expect(s.remoteTip()).toBe(two.sha);
    await ws.publish(two.push!);
    expect(s.pushes()).toBe(1);
    expect(checkpointCommits(s.repo.bare, 'goal/g1').map((c) => c.task)).toEqual(['one', 'two']);
  });

  it('a push someone else got ahead of is rejected for good; resync goes back to their branch and says which checkpoints it has', async () => {
    const s = await setup();
    const ws = s.make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1\n');
    const one = await ws.commit(input('one'));
    await ws.publish(one.push!);
    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    const two = await ws.commit(input('two'));

    const human = join(s.root, 'human');
    git(s.root, 'clone', '--quiet', '--branch', 'goal/g1', s.repo.bare, human);
    writeFileSync(join(human, 'human.txt'), 'mine\n');
    git(human, 'add', 'human.txt');
    git(human, '-c', 'user.name=h', '-c', 'user.email=h@example.com', 'commit', '--quiet', '-m', 'human fix');
    git(human, 'push', '--quiet', 'origin', 'goal/g1');
    const theirs = s.remoteTip();

    await expect(ws.publish(two.push!)).rejects.toBeInstanceOf(PushRejectedError);
    expect(s.remoteTip()).toBe(theirs);
    // Their commit wins; our "two" did not reach the remote and is no longer in the tree.
    expect((await ws.resync()).map((c) => c.taskId)).toEqual(['one']);
    expect(await ws.head()).toBe(theirs);
    expect(existsSync(join(ws.dir, 'two.txt'))).toBe(false);
    expect(readFileSync(join(ws.dir, 'human.txt'), 'utf8')).toBe('mine\n');
    // The loop goes on from there: the next checkpoint builds on theirs.
    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    const again = await ws.commit(input('two'));
    await ws.publish(again.push!);
    expect(git(s.repo.bare, 'log', '--format=%s', 'goal/g1').split('\n').slice(0, 3)).toEqual(['two: TWO', 'human fix', 'one: ONE']);
  });

  it('a run that died after committing: a new run on the same clone pushes the commit (the outbox payload is all it needs), twice harmlessly', async () => {
    const s = await setup();
    const dead = s.make();
    await dead.prepare();
    await writeFile(join(dead.dir, 'one.txt'), '1\n');
    const one = await dead.commit(input('one'));

    const next = s.make(); // not prepared: the outbox is settled before prepare
    await next.publish(one.push!);
    expect(s.remoteTip()).toBe(one.sha);
    await s.make().publish(one.push!); // the answer of the first was lost: already done
    expect(s.remoteTip()).toBe(one.sha);
    expect((await next.prepare()).map((c) => c.taskId)).toEqual(['one']);
  });

  it('a push whose commit no clone here holds (another machine made it) cannot be done: rejected for good', async () => {
    const s = await setup();
    const ws = s.make();
    await expect(ws.publish({ sha: 'a'.repeat(40), lease: '' })).rejects.toThrow(/no clone here holds checkpoint a{12}/);
    await ws.prepare();
    await expect(ws.publish({ sha: 'b'.repeat(40), lease: '' })).rejects.toThrow(/checkpoint b{12} is not in this clone/);
    expect(s.pushes()).toBe(0);
  });

  it('while our pushes are pending, sync does not take the remote (behind us) for a human push', async () => {
    const s = await setup();
    const ws = new GitWorkspace({ remote: s.repo.bare, dir: join(s.root, 'ws'), goalId: 'g1', branch: 'goal/g1', identity: { name: 'goal-loop', email: 'bot@example.com' }, syncIntervalMs: 0 });
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1\n');
    const one = await ws.commit(input('one'));
    await ws.publish(one.push!);
    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    const two = await ws.commit(input('two'));
    await ws.sync();
    expect(await ws.head()).toBe(two.sha);
    await ws.publish(two.push!);
    await ws.sync();
    expect(await ws.head()).toBe(two.sha);
  });
});

describe('pushes spaced in time: checkpoints that come quicker go out together', () => {
  it('a checkpoint committed soon after a push waits out the interval, and the ones committed meanwhile go with it in one push', async () => {
    const s = await setup();
    const ws = new GitWorkspace({ remote: s.repo.bare, dir: join(s.root, 'ws'), goalId: 'g1', branch: 'goal/g1', identity: { name: 'goal-loop', email: 'bot@example.com' }, pushIntervalMs: 60_000 });
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1\n');
    const one = await ws.commit(input('one'));
    await ws.publish(one.push!); // the first push goes at once
    expect(s.pushes()).toBe(1);

    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    const two = await ws.commit(input('two'));
    let done = false;
    const second = ws.publish(two.push!).then(() => {
      done = true;
    });
    await new Promise((r) => setTimeout(r, 300));
    await writeFile(join(ws.dir, 'three.txt'), '3\n');
    const three = await ws.commit(input('three'));
    expect(done).toBe(false);
    expect(s.remoteTip()).toBe(one.sha);

    ws.flushPushes(); // the loop waits for its pushes: they go now
    await second;
    await ws.publish(three.push!);
    expect(s.remoteTip()).toBe(three.sha);
    expect(s.pushes()).toBe(2);
    expect(checkpointCommits(s.repo.bare, 'goal/g1').map((c) => c.task)).toEqual(['one', 'two', 'three']);
  });

  it('a checkpoint pushed inline (checkpoint) never waits, and neither does a dead run’s push from a new instance', async () => {
    const s = await setup();
    const make = () =>
      new GitWorkspace({ remote: s.repo.bare, dir: join(s.root, 'ws'), goalId: 'g1', branch: 'goal/g1', identity: { name: 'goal-loop', email: 'bot@example.com' }, pushIntervalMs: 600_000 });
    const ws = make();
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1\n');
    await ws.checkpoint(input('one'));
    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    await ws.checkpoint(input('two')); // would wait 10 minutes if it were spaced
    await writeFile(join(ws.dir, 'three.txt'), '3\n');
    const three = await ws.commit(input('three'));
    expect(s.pushes()).toBe(2);

    // The run died before the push: another instance pushes the recorded commit at once.
    await make().publish(three.push!);
    expect(s.remoteTip()).toBe(three.sha);
  });
});
