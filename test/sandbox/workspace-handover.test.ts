import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BwrapSandbox } from '../../src/sandbox/bwrap-sandbox.js';
import { HandoverMemo, handOverWorkspace } from '../../src/sandbox/workspace-owner.js';
import { clockPastCtimes } from '../helpers/clock-past.js';
import { tempDir } from '../helpers/temp.js';

// The bot runs as root here (as in CI and the image): the jail gets a uid of its own, and the
// workspace is handed to it before each command. With a memo, only the folders changed since the
// last handover are looked at. Each case writes, as root, what a handover that looked only at
// changed folders could miss, in folders the memo already knows: the next handover must give it.
const UID = 4_100_123;
const GID = 4_100_123;

/** Every path below `dir` (not `.git`'s content) that the jail uid does not own (names as bytes: some are not UTF-8). */
function notGiven(dir: string, rel = Buffer.alloc(0)): string[] {
  const out: string[] = [];
  const base = Buffer.from(dir);
  for (const name of readdirSync(rel.length > 0 ? Buffer.concat([base, Buffer.from('/'), rel]) : base, { encoding: 'buffer' })) {
    const path = rel.length > 0 ? Buffer.concat([rel, Buffer.from('/'), name]) : name;
    if (path.toString() === '.git') continue;
    const st = lstatSync(Buffer.concat([base, Buffer.from('/'), path]));
    if (st.uid !== UID || st.gid !== GID) out.push(path.toString('latin1'));
    if (st.isDirectory()) out.push(...notGiven(dir, path));
  }
  return out;
}

async function knownTree() {
  const dir = await tempDir();
  for (const d of ['src/a/deep', 'src/b', 'docs']) mkdirSync(join(dir, d), { recursive: true });
  for (const f of ['src/a/deep/x.txt', 'src/b/y.txt', 'docs/z.md', 'top.txt']) writeFileSync(join(dir, f), 'x\n');
  mkdirSync(join(dir, '.git'));
  writeFileSync(join(dir, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  // No racy window: every folder read is remembered at once (by default one changed in the last 2 s is read again).
  const memo = new HandoverMemo({ uid: UID, gid: GID }, { racyMs: 0 });
  await handOverWorkspace(dir, UID, GID, 'workspace', memo);
  expect(notGiven(dir)).toEqual([]);
  // Folders the handover gave changed ctime by it: read once more, then remembered as the jail's.
  await clockPastCtimes(dir);
  await handOverWorkspace(dir, UID, GID, 'workspace', memo);
  return { dir, memo };
}

describe('the workspace handover that looks only at what changed still gives the jail everything', () => {
  it('an unchanged tree is not read again; the .git stays the bot’s', async () => {
    const { dir, memo } = await knownTree();
    const reads = memo.reads;
    await handOverWorkspace(dir, UID, GID, 'workspace', memo);
    expect(memo.reads).toBe(reads);
    expect(lstatSync(join(dir, '.git')).uid).toBe(0);
    expect(lstatSync(join(dir, '.git', 'HEAD')).uid).toBe(0);
  });

  it('files and folders the bot wrote deep in known folders (a checkout, the agent’s file tools)', async () => {
    const { dir, memo } = await knownTree();
    writeFileSync(join(dir, 'src', 'a', 'deep', 'new.txt'), 'n\n');
    mkdirSync(join(dir, 'src', 'b', 'fresh', 'er'), { recursive: true });
    writeFileSync(join(dir, 'src', 'b', 'fresh', 'er', 'f.txt'), 'f\n');
    // A file replaced by rename (what git's checkout does): a new inode under the old name.
    writeFileSync(join(dir, 'docs', '.tmp'), 'new\n');
    renameSync(join(dir, 'docs', '.tmp'), join(dir, 'docs', 'z.md'));
    await handOverWorkspace(dir, UID, GID, 'workspace', memo);
    expect(notGiven(dir)).toEqual([]);
  });

  it('a whole folder moved in from outside the tree, with its own root-owned folders below', async () => {
    const { dir, memo } = await knownTree();
    const outside = await tempDir();
    mkdirSync(join(outside, 'pkg', 'lib'), { recursive: true });
    writeFileSync(join(outside, 'pkg', 'lib', 'i.js'), '1\n');
    renameSync(join(outside, 'pkg'), join(dir, 'src', 'a', 'deep', 'pkg'));
    await handOverWorkspace(dir, UID, GID, 'workspace', memo);
    expect(notGiven(dir)).toEqual([]);
  });

  it('a known folder replaced by another of the same name', async () => {
    const { dir, memo } = await knownTree();
    renameSync(join(dir, 'src', 'b'), join(dir, 'old-b'));
    mkdirSync(join(dir, 'src', 'b'));
    writeFileSync(join(dir, 'src', 'b', 'y.txt'), 'replaced\n');
    await handOverWorkspace(dir, UID, GID, 'workspace', memo);
    expect(notGiven(dir)).toEqual([]);
  });

  it('a symlink the bot wrote is given itself; what it points to (outside the tree) is not touched', async () => {
    const { dir, memo } = await knownTree();
    const outside = await tempDir();
    writeFileSync(join(outside, 'secret'), 's\n');
    symlinkSync(join(outside, 'secret'), join(dir, 'src', 'b', 'link'));
    symlinkSync(outside, join(dir, 'src', 'dirlink'));
    await handOverWorkspace(dir, UID, GID, 'workspace', memo);
    expect(notGiven(dir)).toEqual([]);
    expect(lstatSync(join(outside, 'secret')).uid).toBe(0);
    expect(lstatSync(outside).uid).toBe(0);
  });

  it('names that are not UTF-8 and names that look like options are handed over too', async () => {
    const { dir, memo } = await knownTree();
    const odd = Buffer.concat([Buffer.from(join(dir, 'src', 'a', 'deep')), Buffer.from('/caf\xe9', 'latin1')]);
    mkdirSync(odd);
    writeFileSync(Buffer.concat([odd, Buffer.from('/f.txt')]), 'f\n');
    mkdirSync(join(dir, 'docs', '-exec'));
    writeFileSync(join(dir, 'docs', '-exec', 'g.txt'), 'g\n');
    await handOverWorkspace(dir, UID, GID, 'workspace', memo);
    expect(lstatSync(odd).uid).toBe(UID);
    expect(notGiven(dir)).toEqual([]);
  });
});

describe('a handover that fails', () => {
  it('rejects with the reason (the process lives on), and remembers nothing: the next one looks again', async () => {
    const { dir, memo } = await knownTree();
    // A folder nested past PATH_MAX (made by relative steps): `chown` cannot name what is in it.
    const step = 'd'.repeat(200);
    execFileSync('bash', ['-c', `cd src/b && for i in $(seq 25); do mkdir ${step} && cd ${step}; done && touch deep.txt`], { cwd: dir });
    const reads = memo.reads;
    await expect(handOverWorkspace(dir, UID, GID, 'workspace', memo)).rejects.toThrow(/cannot give the workspace .* to the sandbox uid/);
    expect(memo.reads).toBe(reads);
    await expect(handOverWorkspace(dir, UID, GID, 'workspace', memo)).rejects.toThrow(/sandbox uid/);
    execFileSync('rm', ['-rf', join(dir, 'src', 'b', step)]);
  });
});

describe('resident jails with the remembered handover', () => {
  it('a file the bot wrote into a known folder between two commands is writable by the next command', async () => {
    const dir = await tempDir();
    mkdirSync(join(dir, 'src', 'a'), { recursive: true });
    writeFileSync(join(dir, 'src', 'a', 'one.txt'), '1\n');
    const sandbox = new BwrapSandbox({});
    try {
      const run = (command: string) => sandbox.run({ command, cwd: dir, timeoutMs: 30_000 });
      expect((await run('echo one >> src/a/one.txt')).exitCode).toBe(0);
      writeFileSync(join(dir, 'src', 'a', 'two.txt'), '2\n'); // as root, like a checkout
      const second = await run('echo two >> src/a/two.txt && cat src/a/two.txt');
      expect(second.exitCode).toBe(0);
      expect(second.output).toContain('two');
      expect(sandbox.stats.warmHits).toBeGreaterThan(0);
    } finally {
      await sandbox.dispose();
    }
  });
});
