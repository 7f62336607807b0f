import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NestedRepositoryError, NestedScanMemo, refuseNestedRepositories } from '../../src/workspace/nested-repos.js';
import { clockPastCtimes } from '../helpers/clock-past.js';
import { tempDir } from '../helpers/temp.js';

describe('the nested-repository search reads only the folders changed since it last read them', () => {
  it('reads every folder once, then none of an unchanged tree, then only the one a file was added to', async () => {
    const root = await tempDir();
    for (let i = 0; i < 30; i++) mkdirSync(join(root, 'src', `d${i}`, 'inner'), { recursive: true });
    const memo = new NestedScanMemo({ racyMs: 0 });
    await clockPastCtimes(root);
    await refuseNestedRepositories(root, [], memo);
    expect(memo.reads).toBe(1 + 1 + 30 + 30);
    await refuseNestedRepositories(root, [], memo);
    expect(memo.reads).toBe(62);
    writeFileSync(join(root, 'src', 'd7', 'inner', 'new.txt'), 'x');
    await refuseNestedRepositories(root, [], memo);
    expect(memo.reads).toBe(63);
    mkdirSync(join(root, 'src', 'd9', 'inner', '.git'));
    await expect(refuseNestedRepositories(root, [], memo)).rejects.toBeInstanceOf(NestedRepositoryError);
  });

  it('a folder changed within the racy window (2 s by default) is read again by every search: a change in the same clock tick keeps its ctime', async () => {
    const root = await tempDir();
    mkdirSync(join(root, 'a', 'b'), { recursive: true });
    const memo = new NestedScanMemo();
    await refuseNestedRepositories(root, [], memo);
    await refuseNestedRepositories(root, [], memo);
    expect(memo.reads).toBe(6);
  });
});

// Setup output the host moved in from its cache is read into the memo in the background, while the
// first task runs: that walk runs beside a command, so it follows nothing the command swapped in.
describe('a warm walk of restored folders', () => {
  it('reads them ahead: the next search reads none of them, and still finds a repository planted after it', async () => {
    const root = await tempDir();
    for (let i = 0; i < 20; i++) mkdirSync(join(root, 'node_modules', `p${i}`, 'lib'), { recursive: true });
    mkdirSync(join(root, 'src'));
    const memo = new NestedScanMemo({ racyMs: 0 });
    await clockPastCtimes(root);
    memo.warm(root, ['node_modules/', 'missing/', 'package-lock.json']);
    await memo.warmed();
    expect(memo.reads).toBe(1 + 20 + 20);
    await refuseNestedRepositories(root, [], memo);
    expect(memo.reads).toBe(41 + 2); // the root and src: not warmed
    mkdirSync(join(root, 'node_modules', 'p3', 'lib', '.git'));
    await expect(refuseNestedRepositories(root, [], memo)).rejects.toBeInstanceOf(NestedRepositoryError);
  });

  it('follows no link: a restored folder a command replaced with a link to a folder outside is not read', async () => {
    const root = await tempDir();
    const outside = await tempDir();
    for (let i = 0; i < 5; i++) mkdirSync(join(outside, `host${i}`, 'deep'), { recursive: true });
    mkdirSync(join(root, 'node_modules', 'a'), { recursive: true });
    renameSync(join(root, 'node_modules'), join(root, 'gone'));
    symlinkSync(outside, join(root, 'node_modules'));
    const memo = new NestedScanMemo({ racyMs: 0 });
    await clockPastCtimes(outside);
    memo.warm(root, ['node_modules']);
    await memo.warmed();
    expect(memo.reads).toBe(0);
  });

  it('a search waits for the warm walk under way, and what the walk could not read is read by the search', async () => {
    const root = await tempDir();
    mkdirSync(join(root, 'node_modules', 'hidden', 'x'), { recursive: true });
    mkdirSync(join(root, 'node_modules', 'hidden', 'x', '.git'));
    const memo = new NestedScanMemo({ racyMs: 0 });
    await clockPastCtimes(root);
    memo.warm(root, ['node_modules']);
    // Not awaited: the search itself waits for it, then finds what the warm walk did not remember.
    await expect(refuseNestedRepositories(root, [], memo)).rejects.toBeInstanceOf(NestedRepositoryError);
  });
});
