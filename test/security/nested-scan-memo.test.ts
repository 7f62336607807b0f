import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { NestedRepositoryError, NestedScanMemo } from '../../src/workspace/nested-repos.js';
import { tempDir } from '../helpers/temp.js';

/**
 * The nested-repository search reads again only the folders whose inode or ctime changed since it
 * last read them. Each attack plants a repository in a folder the search already knows (after a
 * checkpoint that searched the whole tree), hiding it as well as a task can: the next checkpoint
 * must still refuse it.
 */
async function knownTree() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'), { 'lib/deep/er/file.txt': 'x\n', 'lib/other/file.txt': 'y\n' });
  // No racy window: every folder read is remembered at once, so each plant lands in a folder the
  // search would otherwise skip (by default a folder changed in the last 2 s is always read).
  const ws = new GitWorkspace({
    remote: repo.bare,
    dir: join(root, 'ws'),
    goalId: 'g',
    branch: 'goal/g',
    identity: { name: 'goal-loop', email: 'b@example.com' },
    nestedScanMemo: new NestedScanMemo({ racyMs: 0 }),
  });
  await ws.prepare();
  writeFileSync(join(ws.dir, 'lib', 'deep', 'er', 'file.txt'), 'changed\n');
  await ws.checkpoint({ goalId: 'g', taskId: 'one', title: 'One', attempt: 1 });
  // A second task's change, so that the checkpoint has something to commit.
  writeFileSync(join(ws.dir, 'lib', 'other', 'file.txt'), 'changed too\n');
  return { root, ws };
}

const refused = (ws: GitWorkspace) => expect(ws.checkpoint({ goalId: 'g', taskId: 'two', title: 'Two', attempt: 1 })).rejects.toBeInstanceOf(NestedRepositoryError);

describe('the nested-repository search that reads only what changed still finds every planted repository', () => {
  it('a .git made deep in a folder the search knows', async () => {
    const { ws } = await knownTree();
    mkdirSync(join(ws.dir, 'lib', 'deep', 'er', '.git'));
    await refused(ws);
  });

  it('a folder laid out as a bare repository (HEAD, refs, objects) in a known folder', async () => {
    const { ws } = await knownTree();
    const bare = join(ws.dir, 'lib', 'other', 'sub');
    mkdirSync(join(bare, 'refs'), { recursive: true });
    mkdirSync(join(bare, 'objects'));
    writeFileSync(join(bare, 'HEAD'), 'ref: refs/heads/main\n');
    await refused(ws);
  });

  it('the known folder turned into one (HEAD, refs, objects in it), with its modification time set back', async () => {
    const { ws } = await knownTree();
    const dir = join(ws.dir, 'lib', 'deep');
    mkdirSync(join(dir, 'refs'));
    mkdirSync(join(dir, 'objects'));
    writeFileSync(join(dir, 'HEAD'), 'ref: refs/heads/main\n');
    // A task can set a folder's mtime (and atime) back; its ctime moves anyway.
    execFileSync('touch', ['-h', '-d', '2001-01-01', dir]);
    await refused(ws);
  });

  it('a known folder replaced by another of the same name that holds a .git', async () => {
    const { root, ws } = await knownTree();
    const elsewhere = join(root, 'planted');
    mkdirSync(join(elsewhere, 'er', '.git'), { recursive: true });
    rmSync(join(ws.dir, 'lib', 'deep'), { recursive: true });
    renameSync(elsewhere, join(ws.dir, 'lib', 'deep'));
    await refused(ws);
  });

  it('a folder holding a .git moved into a known folder from one the search never saw', async () => {
    const { ws } = await knownTree();
    mkdirSync(join(ws.dir, 'fresh', 'nested', '.git'), { recursive: true });
    renameSync(join(ws.dir, 'fresh', 'nested'), join(ws.dir, 'lib', 'other', 'nested'));
    await refused(ws);
  });
});
