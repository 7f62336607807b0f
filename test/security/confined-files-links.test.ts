import { existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfinedFiles } from '../../src/sandbox/confined-files.js';
import { tempDir } from '../helpers/temp.js';

// ConfinedFiles resolves symlinks itself (the kernel never follows one for it): these pin that
// resolution, which the race test exercises only for one shape of link.

let root: string;
let ws: string;
let files: ConfinedFiles;

beforeEach(async () => {
  root = await tempDir('goal-loop-links-');
  ws = join(root, 'ws');
  mkdirSync(join(ws, 'src'), { recursive: true });
  mkdirSync(join(ws, 'a', 'b'), { recursive: true });
  mkdirSync(join(ws, '.git'));
  writeFileSync(join(ws, '.git', 'config'), '[core]\n');
  writeFileSync(join(ws, 'src', 'index.js'), 'index\n');
  writeFileSync(join(root, 'secret.txt'), 'host secret\n');
  files = new ConfinedFiles(ws);
});

const refused = (p: Promise<unknown>, message: RegExp) => expect(p).rejects.toThrow(expect.objectContaining({ name: 'ConfinementError', message: expect.stringMatching(message) }));

describe('symlinks inside the workspace, resolved by the walk', () => {
  it('follows chains, `..` in targets (against the physical directory) and absolute targets inside', async () => {
    symlinkSync('../../src', join(ws, 'a', 'b', 'up'));
    symlinkSync('link2', join(ws, 'link1'));
    symlinkSync('src/index.js', join(ws, 'link2'));
    symlinkSync(join(ws, 'src', 'index.js'), join(ws, 'abs'));
    // `a/b` reached through `ab`: `..` in `up` is taken from the physical a/b, as the kernel would.
    symlinkSync('a/b', join(ws, 'ab'));
    expect(await files.read('a/b/up/index.js')).toBe('index\n');
    expect(await files.read('ab/up/index.js')).toBe('index\n');
    expect(await files.read('link1')).toBe('index\n');
    expect(await files.read('abs')).toBe('index\n');
    expect(await files.resolveExisting('ab/up/index.js')).toBe(join(files.root, 'src', 'index.js'));
    expect((await files.list('ab/up')).entries).toEqual([{ name: 'index.js', type: 'file' }]);
  });

  it('writes through a link to a directory (creating what is missing) and to an existing file, never to a dangling one', async () => {
    symlinkSync('src', join(ws, 'srclink'));
    symlinkSync('src/index.js', join(ws, 'filelink'));
    symlinkSync('src/missing.js', join(ws, 'dangling'));
    await files.write('srclink/new/deep.ts', 'deep');
    expect(readFileSync(join(ws, 'src', 'new', 'deep.ts'), 'utf8')).toBe('deep');
    await files.write('filelink', 'through');
    expect(readFileSync(join(ws, 'src', 'index.js'), 'utf8')).toBe('through');
    expect(lstatSync(join(ws, 'filelink')).isSymbolicLink()).toBe(true);
    await refused(files.write('dangling', 'x'), /a symlink whose target does not exist/);
    expect(existsSync(join(ws, 'src', 'missing.js'))).toBe(false);
  });

  it('a link to the workspace root is the root: listed, written into, never read or removed as a file', async () => {
    symlinkSync('.', join(ws, 'here'));
    await refused(files.read('here'), /not a regular file/);
    await files.write('here/top.txt', 'top');
    expect(readFileSync(join(ws, 'top.txt'), 'utf8')).toBe('top');
    expect((await files.list('here')).entries.map((e) => e.name)).toContain('top.txt');
    await files.remove('here');
    expect(existsSync(join(ws, 'here'))).toBe(false);
    expect(existsSync(join(ws, 'top.txt'))).toBe(true);
  });

  it('refuses targets that climb out, that reach .git by any spelling, and loops', async () => {
    symlinkSync('../../../secret.txt', join(ws, 'a', 'b', 'esc'));
    symlinkSync('../../..', join(ws, 'a', 'b', 'parent'));
    symlinkSync('a/b/../../.git', join(ws, 'sneaky'));
    symlinkSync('src/../.GIT/config', join(ws, 'upper'));
    symlinkSync('loop2', join(ws, 'loop1'));
    symlinkSync('loop1', join(ws, 'loop2'));
    symlinkSync('self/x', join(ws, 'self'));
    await refused(files.read('a/b/esc'), /resolves outside the workspace/);
    await refused(files.read('a/b/parent/secret.txt'), /resolves outside the workspace/);
    await refused(files.list('a/b/parent'), /resolves outside the workspace/);
    await refused(files.write('sneaky/config', 'x'), /resolves into \.git/);
    await refused(files.read('upper'), /resolves into \.git/);
    await refused(files.list('sneaky'), /resolves into \.git/);
    await refused(files.read('loop1'), /too many levels of symlinks/);
    await refused(files.write('self', 'x'), /too many levels of symlinks/);
    expect(readFileSync(join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
  });

  it('removes through linked parents, but a link as the last name is removed itself', async () => {
    symlinkSync('src', join(ws, 'srclink'));
    await files.remove('srclink/index.js');
    expect(existsSync(join(ws, 'src', 'index.js'))).toBe(false);
    await files.remove('srclink');
    expect(existsSync(join(ws, 'srclink'))).toBe(false);
    expect(existsSync(join(ws, 'src'))).toBe(true);
  });

  it('names what is not a directory, and never a /proc path, in its messages', async () => {
    await refused(files.write('src/index.js/x.ts', 'x'), /^src\/index\.js\/x\.ts: src\/index\.js is not a directory$/);
    await refused(files.list('src/index.js'), /^src\/index\.js: not a directory$/);
    await refused(files.read('src/nope/x'), /^src\/nope\/x: no such file or directory$/);
    const err = await files.read('src').catch((e: Error) => e);
    expect((err as Error).message).not.toContain('/proc');
  });
});
