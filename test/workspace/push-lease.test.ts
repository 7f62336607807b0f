import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

async function setup() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  // Syncs are rate-limited as in production, so a human's push lands between two of our looks.
  const ws = new GitWorkspace({ remote: repo.bare, dir: join(root, 'ws'), goalId: 'g1', branch: 'goal/g1', identity: { name: 'goal-loop', email: 'bot@example.com' }, syncIntervalMs: 60_000 });
  const human = join(root, 'human');
  git(root, 'clone', '--quiet', repo.bare, human);
  git(human, 'config', 'user.name', 'Human');
  git(human, 'config', 'user.email', 'human@example.com');
  return { root, repo, ws, human };
}

describe('GitWorkspace push: --force-with-lease against the last known checkpoint', () => {
  it('rejects our push when a human pushed to the goal branch since we looked; theirs survives and the retry builds on it', async () => {
    const { repo, ws, human } = await setup();
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1\n');
    await ws.checkpoint({ goalId: 'g1', taskId: 'one', title: 'One', attempt: 1 });

    git(human, 'fetch', '--quiet', 'origin');
    git(human, 'checkout', '--quiet', '-b', 'goal/g1', 'origin/goal/g1');
    await writeFile(join(human, 'human.txt'), 'mine\n');
    git(human, 'add', 'human.txt');
    git(human, 'commit', '--quiet', '-m', 'human fix');
    git(human, 'push', '--quiet', 'origin', 'goal/g1');
    const humanTip = git(repo.bare, 'rev-parse', 'goal/g1');

    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    await expect(ws.checkpoint({ goalId: 'g1', taskId: 'two', title: 'Two', attempt: 1 })).rejects.toThrow(
      /goal branch goal\/g1 moved on the remote \(someone else pushed [0-9a-f]{12}\): checkpoint [0-9a-f]{12} was not pushed/,
    );
    expect(git(repo.bare, 'rev-parse', 'goal/g1')).toBe(humanTip);

    await ws.sync(); // a failed push forces the next sync through the rate limit
    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    await ws.checkpoint({ goalId: 'g1', taskId: 'two', title: 'Two', attempt: 2 });
    expect(git(repo.bare, 'log', '--format=%s', 'goal/g1').split('\n').slice(0, 3)).toEqual(['two: Two', 'human fix', 'one: One']);
  });

  it('does not re-add checkpoints a human rewound away (a fast-forward push would)', async () => {
    const { repo, ws, human } = await setup();
    await ws.prepare();
    await writeFile(join(ws.dir, 'one.txt'), '1\n');
    await ws.checkpoint({ goalId: 'g1', taskId: 'one', title: 'One', attempt: 1 });
    await writeFile(join(ws.dir, 'two.txt'), '2\n');
    await ws.checkpoint({ goalId: 'g1', taskId: 'two', title: 'Two', attempt: 1 });

    // The human drops checkpoint "two" from the branch.
    git(human, 'fetch', '--quiet', 'origin');
    git(human, 'push', '--quiet', '--force', 'origin', 'origin/goal/g1~1:refs/heads/goal/g1');
    expect(checkpointCommits(repo.bare, 'goal/g1').map((c) => c.task)).toEqual(['one']);

    await writeFile(join(ws.dir, 'three.txt'), '3\n');
    await expect(ws.checkpoint({ goalId: 'g1', taskId: 'three', title: 'Three', attempt: 1 })).rejects.toThrow();
    expect(checkpointCommits(repo.bare, 'goal/g1').map((c) => c.task)).toEqual(['one']);
  });
});
