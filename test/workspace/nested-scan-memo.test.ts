import { mkdirSync, writeFileSync } from 'node:fs';
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
