import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfinedFiles, ConfinementError } from '../../src/sandbox/confined-files.js';
import { tempDir } from '../helpers/temp.js';

let root: string;
let ws: string;
let files: ConfinedFiles;

beforeEach(async () => {
  root = await tempDir('goal-loop-files-');
  ws = join(root, 'ws');
  mkdirSync(join(ws, 'src'), { recursive: true });
  mkdirSync(join(ws, '.git', 'hooks'), { recursive: true });
  writeFileSync(join(ws, '.git', 'config'), '[core]\n');
  writeFileSync(join(ws, 'src', 'index.js'), 'export const x = 1;\n');
  writeFileSync(join(root, 'secret.txt'), 'host secret\n');
  files = new ConfinedFiles(ws, { maxReadBytes: 1024, maxWriteBytes: 1024 });
});

const refused = (p: Promise<unknown>, message: RegExp) => expect(p).rejects.toThrow(expect.objectContaining({ name: 'ConfinementError', message: expect.stringMatching(message) }));

describe("the agent's file tools stay inside the workspace", () => {
  it('read, write (creating directories), list and remove inside the workspace', async () => {
    expect(await files.read('src/index.js')).toBe('export const x = 1;\n');
    expect(await files.read('./src//index.js')).toBe('export const x = 1;\n');
    await files.write('src/new/deep/file.ts', 'hello');
    expect(readFileSync(join(ws, 'src/new/deep/file.ts'), 'utf8')).toBe('hello');
    await files.write('src/index.js', 'short');
    expect(readFileSync(join(ws, 'src/index.js'), 'utf8')).toBe('short');
    expect((await files.list('.')).entries).toEqual([{ name: 'src', type: 'dir' }]); // no .git
    await files.remove('src/new/deep/file.ts');
    expect(existsSync(join(ws, 'src/new/deep/file.ts'))).toBe(false);
  });

  it('refuses absolute paths and `..` anywhere', async () => {
    await refused(files.read('/etc/passwd'), /absolute paths are refused/);
    await refused(files.read(join(root, 'secret.txt')), /absolute/);
    await refused(files.read('../secret.txt'), /`\.\.` is refused/);
    await refused(files.read('src/../../secret.txt'), /`\.\.`/);
    await refused(files.write('src/../../escape.txt', 'x'), /`\.\.`/);
    await refused(files.read('src/\0x'), /NUL/);
    await refused(files.read(''), /empty/);
    expect(existsSync(join(root, 'escape.txt'))).toBe(false);
  });

  it('refuses .git and anything under it, in any case, directly or through a symlink', async () => {
    await refused(files.read('.git/config'), /\.git is off limits/);
    await refused(files.write('.git/hooks/pre-commit', '#!/bin/sh\n'), /\.git/);
    await refused(files.write('.GIT/config', 'x'), /\.git/);
    await refused(files.write('src/.git/config', 'x'), /\.git/);
    await refused(files.list('.git'), /\.git/);
    await refused(files.remove('.git'), /\.git/);
    symlinkSync('.git', join(ws, 'gitlink'));
    symlinkSync('.git/config', join(ws, 'configlink'));
    await refused(files.read('configlink'), /resolves into \.git/);
    await refused(files.write('gitlink/hooks/post-checkout', '#!/bin/sh\n'), /\.git/);
    await refused(files.write('configlink', '[core]\n\tfsmonitor = evil\n'), /\.git/);
    expect(existsSync(join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(existsSync(join(ws, '.git', 'hooks', 'post-checkout'))).toBe(false);
    expect(readFileSync(join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
  });

  it('refuses symlinks that leave the workspace, for reads and for writes', async () => {
    symlinkSync(join(root, 'secret.txt'), join(ws, 'abs-link'));
    symlinkSync('../secret.txt', join(ws, 'rel-link'));
    symlinkSync(root, join(ws, 'dir-link'));
    symlinkSync('/etc', join(ws, 'src', 'etc'));
    await refused(files.read('abs-link'), /outside the workspace/);
    await refused(files.read('rel-link'), /outside the workspace/);
    await refused(files.read('dir-link/secret.txt'), /outside the workspace/);
    await refused(files.read('src/etc/passwd'), /outside the workspace/);
    await refused(files.write('abs-link', 'overwritten'), /outside the workspace/);
    await refused(files.write('dir-link/planted.txt', 'x'), /outside the workspace/);
    await refused(files.list('dir-link'), /outside the workspace/);
    expect(readFileSync(join(root, 'secret.txt'), 'utf8')).toBe('host secret\n');
    expect(existsSync(join(root, 'planted.txt'))).toBe(false);
    // A symlink that stays inside is fine.
    symlinkSync('src/index.js', join(ws, 'inside-link'));
    expect(await files.read('inside-link')).toBe('export const x = 1;\n');
    // Removing a link removes the link, never its target.
    await files.remove('abs-link');
    expect(existsSync(join(root, 'secret.txt'))).toBe(true);
  });

  it('caps sizes, and refuses FIFOs, devices and hard-linked files', async () => {
    writeFileSync(join(ws, 'big.txt'), 'x'.repeat(2048));
    await refused(files.read('big.txt'), /2048 bytes, more than the 1024-byte read limit/);
    await refused(files.write('out.txt', 'y'.repeat(1025)), /1025 bytes, more than the 1024-byte write limit/);
    expect(existsSync(join(ws, 'out.txt'))).toBe(false);
    execFileSync('mkfifo', [join(ws, 'fifo')]);
    await refused(files.read('fifo'), /not a regular file/);
    symlinkSync('/dev/zero', join(ws, 'zero'));
    await refused(files.read('zero'), /outside the workspace/);
    linkSync(join(root, 'secret.txt'), join(ws, 'hardlink'));
    await refused(files.read('hardlink'), /hard links/);
    await refused(files.write('hardlink', 'x'), /hard links/);
    expect(readFileSync(join(root, 'secret.txt'), 'utf8')).toBe('host secret\n');
  });

  it('reports errors as ConfinementError with the path', async () => {
    const err = await files.read('missing.txt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfinementError);
    expect((err as Error).message).toBe('missing.txt: no such file or directory');
  });
});
