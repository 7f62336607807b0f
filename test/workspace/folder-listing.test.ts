import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { FOLDER_LISTING_FIND, readFolderListing } from '../../src/workspace/folder-listing.js';
import { NestedRepositoryError, NestedScanMemo, refuseNestedRepositories } from '../../src/workspace/nested-repos.js';
import { tempDir } from '../helpers/temp.js';

/** Lists `tree` as a ready copy's listing is made (after the racy window), into `file`. */
async function list(tree: string, file: string): Promise<void> {
  await sleep(150);
  const started = Buffer.from(`${BigInt(Date.now()) * 1_000_000n}\0`);
  writeFileSync(file, Buffer.concat([started, execFileSync('find', ['-P', '.', ...FOLDER_LISTING_FIND], { cwd: tree })]));
}

describe('folder listing of a ready copy', () => {
  it('reads every folder, names as bytes (spaces, newlines, not UTF-8), and its subfolders', async () => {
    const root = await tempDir();
    const tree = join(root, 'tree');
    const odd = Buffer.concat([Buffer.from(join(tree, 'node_modules', 'a b\nc')), Buffer.from([0x2f, 0xff, 0x66])]);
    mkdirSync(odd, { recursive: true });
    mkdirSync(join(tree, 'node_modules', 'dep', 'lib'), { recursive: true });
    writeFileSync(join(tree, 'node_modules', 'dep', 'index.js'), 'x');
    await list(tree, join(root, 'folders'));
    const listing = await readFolderListing(join(root, 'folders'));
    expect([...listing!.folders.keys()].sort()).toEqual(['node_modules', 'node_modules/a b\nc', 'node_modules/a b\nc/\xfff', 'node_modules/dep', 'node_modules/dep/lib'].sort());
    expect(
      listing!.folders
        .get('node_modules')!
        .subdirs.map((b) => b.toString('latin1'))
        .sort(),
    ).toEqual(['node_modules/a b\nc', 'node_modules/dep']);
    expect(listing!.folders.get('node_modules/dep')!.names.map(String)).toEqual(['lib']); // files are not listed
    expect(listing!.walkStartedMs).toBeLessThanOrEqual(Date.now());
  });

  it('a listing cut short, or not one, is no listing', async () => {
    const root = await tempDir();
    mkdirSync(join(root, 'tree', 'node_modules', 'dep'), { recursive: true });
    await list(join(root, 'tree'), join(root, 'folders'));
    const whole = execFileSync('cat', [join(root, 'folders')]);
    writeFileSync(join(root, 'cut'), whole.subarray(0, whole.length - 3));
    writeFileSync(join(root, 'junk'), 'd 12 not-a-time node_modules\0');
    for (const f of ['cut', 'junk', 'missing']) expect(await readFolderListing(join(root, f)), f).toBeUndefined();
  });

  it('attack: a folder the listing shows holding a repository is never taken as searched', async () => {
    const root = await tempDir();
    const tree = join(root, 'ws');
    mkdirSync(join(tree, 'node_modules', 'clean', 'lib'), { recursive: true });
    // A `.git` folder, a gitfile, and a folder laid out as a bare repository.
    mkdirSync(join(tree, 'node_modules', 'a', '.git'), { recursive: true });
    mkdirSync(join(tree, 'node_modules', 'b'), { recursive: true });
    writeFileSync(join(tree, 'node_modules', 'b', '.git'), 'gitdir: /elsewhere\n');
    for (const d of ['refs', 'objects']) mkdirSync(join(tree, 'node_modules', 'c', d), { recursive: true });
    writeFileSync(join(tree, 'node_modules', 'c', 'HEAD'), 'ref: refs/heads/main\n');
    await list(tree, join(root, 'folders'));
    const memo = new NestedScanMemo();
    memo.adopt((await readFolderListing(join(root, 'folders')))!);
    const refused = await refuseNestedRepositories(tree, [], memo).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(NestedRepositoryError);
    expect((refused as NestedRepositoryError).paths).toEqual(['node_modules/a/.git', 'node_modules/b/.git', 'node_modules/c']);
    // Of the folders read, only the root is clean: node_modules and the clean ones came from the listing.
    expect(memo.reads).toBe(1);
  });
});
