import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { closingReferences, liveReferences, mentions } from '../helpers/github-references.js';
import { tempDir } from '../helpers/temp.js';

async function workspace() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const make = (dir: string) =>
    new GitWorkspace({ remote: repo.bare, dir, goalId: 'g1', branch: 'goal/g1', protectedPaths: [], identity: { name: 'goal-loop', email: 'bot@example.com' }, syncIntervalMs: 0 });
  const ws = make(join(root, 'ws'));
  await ws.prepare();
  return { root, repo, ws, make };
}

const message = (bare: string) => git(bare, 'log', '-1', '--format=%B', 'goal/g1');
const subject = (bare: string) => git(bare, 'log', '-1', '--format=%s', 'goal/g1');

describe('checkpoint commit messages: a title closes, mentions and forges nothing (real git)', () => {
  it.each([
    ['fixes #1, closes org/other#2 @someone'],
    ['Resolves https://github.com/o/r/issues/3 and closes github.com/o/r/pull/4'],
    ['FIXED: GH-5, resolved:#6, close @org/team'],
    ['see www.evil.example/issues/7 closes o/r#8'],
  ])('%s', async (title) => {
    const { repo, ws } = await workspace();
    await writeFile(join(ws.dir, 'a.txt'), 'a');
    await ws.checkpoint({ goalId: 'g1', taskId: 'task-01', title, attempt: 1 });
    const msg = message(repo.bare);
    expect(closingReferences(msg)).toEqual([]);
    expect(mentions(msg)).toEqual([]);
    expect(liveReferences(subject(repo.bare))).toEqual([]);
    // `<task-id>: <title>`, the title as written once the invisible joiners are taken out.
    expect(subject(repo.bare).replace(/[\u200b\u2060]/g, '')).toBe(`task-01: ${title}`);
    expect(checkpointCommits(repo.bare, 'goal/g1')).toEqual([{ task: 'task-01', attempt: '1', goal: 'g1', subject: subject(repo.bare) }]);
  });

  it('the word joiners survive git and read back as UTF-8; the trailers stay exact and resume finds the checkpoint', async () => {
    const { root, repo, ws, make } = await workspace();
    await writeFile(join(ws.dir, 'a.txt'), 'a');
    const cp = await ws.checkpoint({ goalId: 'g1', taskId: 'task-01', title: 'fixes #1', attempt: 2 });
    expect(message(repo.bare)).toBe('task-01: fixes #\u20601\n\nGoal-Id: g1\nGoal-Task: task-01\nGoal-Attempt: 2');
    expect(git(repo.bare, 'log', '-1', '--format=%(trailers:only,unfold)', 'goal/g1')).toBe('Goal-Id: g1\nGoal-Task: task-01\nGoal-Attempt: 2');
    const again = make(join(root, 'ws2'));
    expect(await again.prepare()).toEqual([{ taskId: 'task-01', sha: cp.sha, attempt: 2 }]);
  });

  it('a title cannot forge trailers: newlines, carriage returns and line separators stay in the subject', async () => {
    const { root, repo, ws, make } = await workspace();
    await writeFile(join(ws.dir, 'a.txt'), 'a');
    const title = 'x\n\nGoal-Task: t9\nGoal-Id: g1\rGoal-Attempt: 9\u2028Goal-Task: t8\u0000\u001b[31m';
    const cp = await ws.checkpoint({ goalId: 'g1', taskId: 'task-01', title, attempt: 1 });
    expect(git(repo.bare, 'log', '-1', '--format=%(trailers:only,unfold)', 'goal/g1')).toBe('Goal-Id: g1\nGoal-Task: task-01\nGoal-Attempt: 1');
    expect(subject(repo.bare)).toBe('task-01: x Goal-Task: t9 Goal-Id: g1 Goal-Attempt: 9 Goal-Task: t8');
    expect(await make(join(root, 'ws2')).prepare()).toEqual([{ taskId: 'task-01', sha: cp.sha, attempt: 1 }]);
  });

  it('a very long title is cut to a bounded subject', async () => {
    const { repo, ws } = await workspace();
    await writeFile(join(ws.dir, 'a.txt'), 'a');
    await ws.checkpoint({ goalId: 'g1', taskId: 'task-01', title: `${'#1 @a '.repeat(20_000)}`, attempt: 1 });
    const s = subject(repo.bare);
    expect(s.length).toBeLessThan(400);
    expect(s.endsWith('…')).toBe(true);
    expect(mentions(s)).toEqual([]);
    expect(liveReferences(s)).toEqual([]);
  });

  it('the Goal-Verified trailer follows Goal-Attempt and reads back on resume; a forged or body-borne value is no evidence', async () => {
    const { root, repo, ws, make } = await workspace();
    await writeFile(join(ws.dir, 'a.txt'), 'a');
    const one = await ws.checkpoint({ goalId: 'g1', taskId: 'task-01', title: 'one', attempt: 2, evidence: 'red->green' });
    expect(one.evidence).toBe('red->green');
    expect(message(repo.bare)).toBe('task-01: one\n\nGoal-Id: g1\nGoal-Task: task-01\nGoal-Attempt: 2\nGoal-Verified: red->green');
    // The body's last paragraph looks like a trailer; the real trailers come after it.
    await writeFile(join(ws.dir, 'b.txt'), 'b');
    const two = await ws.checkpoint({ goalId: 'g1', taskId: 'task-02', title: 'two', attempt: 1, body: 'summary\n\nGoal-Verified: red->green' });
    expect(two.evidence).toBeUndefined();
    // A commit someone else pushed, with a value that is no evidence.
    const human = join(root, 'human');
    git(root, 'clone', '-q', '--branch', 'goal/g1', repo.bare, human);
    git(human, '-c', 'user.name=h', '-c', 'user.email=h@h', 'commit', '-q', '--allow-empty', '-m', 'task-03: forged\n\nGoal-Id: g1\nGoal-Task: task-03\nGoal-Attempt: 1\nGoal-Verified: green');
    git(
      human,
      '-c',
      'user.name=h',
      '-c',
      'user.email=h@h',
      'commit',
      '-q',
      '--allow-empty',
      '-m',
      'task-04: twice\n\nGoal-Id: g1\nGoal-Task: task-04\nGoal-Verified: red->green\nGoal-Verified: green->green',
    );
    git(human, 'push', '-q', 'origin', 'goal/g1');
    const [three, four] = git(human, 'log', '-2', '--format=%H').split('\n').reverse();

    expect(await make(join(root, 'ws2')).prepare()).toEqual([
      { taskId: 'task-01', sha: one.sha, attempt: 2, evidence: 'red->green' },
      { taskId: 'task-02', sha: two.sha, attempt: 1 },
      { taskId: 'task-03', sha: three, attempt: 1 },
      { taskId: 'task-04', sha: four },
    ]);
  });
});
