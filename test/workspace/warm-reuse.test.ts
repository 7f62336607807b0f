import { createHash } from 'node:crypto';
import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { MirrorCache } from '../../src/workspace/mirror-cache.js';
import { git } from '../helpers/git.js';
import { mirrorSetup, pushCommit } from './mirror-helpers.js';

const FILES = {
  '.gitignore': 'dist/\n',
  'package.json': '{ "name": "x" }\n',
  'README.md': 'same\n',
  LICENSE: 'same\n',
  'src/a.js': 'export const a = 1;\n',
  'src/b.js': 'export const b = 2;\n',
  'src/lib/c.js': 'export const c = 3;\n',
  'docs/guide.md': '# guide\n',
};

/** Every entry under `dir` but its top `.git`: type, permission bits, link count, content hash or link target. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const rel = relative(dir, path);
      if (rel === '.git') continue;
      const st = lstatSync(path);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) out[rel] = `link ${readlinkSync(path)}`;
      else if (st.isDirectory()) {
        out[rel] = `dir ${mode}`;
        walk(path);
      } else out[rel] = `file ${mode} ${st.nlink} ${createHash('sha1').update(readFileSync(path)).digest('hex')}`;
    }
  };
  walk(dir);
  return out;
}

/** Every file under `dir`, symlinks not followed. */
function allFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? allFiles(path) : e.isFile() ? [path] : [];
  });
}

describe('reuse of parked working trees', () => {
  it('gives a second goal a tree and .git equal to a fresh clone, whatever the first goal left behind', async () => {
    const { root, repo, cache, make } = await mirrorSetup({}, FILES);
    const ws1 = make('g1');
    await ws1.prepare();
    const d = ws1.dir;
    // What a goal's code may leave: edits, deletions, untracked and ignored files, odd modes,
    // hard links, a symlink out of the tree, nested repositories, attributes that hide an edit.
    writeFileSync(join(d, 'src/a.js'), 'export const a = "changed";\n');
    writeFileSync(join(d, 'src/lib/c.js'), 'export const c = 3;\r\n');
    writeFileSync(join(d, '.gitattributes'), '* text\n');
    writeFileSync(join(d, 'src/.gitattributes'), '* text\n');
    await import('node:fs/promises').then((fs) => fs.rm(join(d, 'src/b.js')));
    writeFileSync(join(d, 'notes.txt'), 'untracked\n');
    mkdirSync(join(d, 'dist'));
    writeFileSync(join(d, 'dist/out.js'), 'ignored\n');
    chmodSync(join(d, 'package.json'), 0o4755);
    chmodSync(join(d, '.gitignore'), 0o6666); // git sees no change here: only the executable bit counts for it
    linkSync(join(d, 'README.md'), join(d, 'LICENSE.tmp'));
    renameSync(join(d, 'LICENSE.tmp'), join(d, 'LICENSE'));
    const outside = join(root, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'guide.md'), '# guide\n');
    await import('node:fs/promises').then((fs) => fs.rm(join(d, 'docs'), { recursive: true }));
    symlinkSync(outside, join(d, 'docs'));
    mkdirSync(join(d, 'vendor/dep/.git/hooks'), { recursive: true });
    writeFileSync(join(d, 'vendor/dep/.git/config'), '[core]\n\tfsmonitor = touch /tmp/planted\n');
    chmodSync(join(d, 'src/lib'), 0o500);
    await ws1.release();

    // Planted into the parked tree itself: a .git with a hook and config that would run programs.
    const [parked] = await cache.warm.list();
    const marker = join(root, 'hook-ran');
    mkdirSync(join(parked!.path, '.git/hooks'), { recursive: true });
    writeFileSync(join(parked!.path, '.git/hooks/post-checkout'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    writeFileSync(join(parked!.path, '.git/config'), `[core]\n\tplanted = yes\n\tfsmonitor = touch ${marker}\n`);
    const parkedIno = statSync(parked!.path).ino;

    const tip = pushCommit(repo, 'src/new.js', 'export const n = 4;\n');
    const ws2 = make('g2');
    await ws2.prepare();
    const fresh = make('fresh', { cache: new MirrorCache({ dir: cache.dir, fetchIntervalMs: 0, warmPerRemote: 0 }) });
    await fresh.prepare();

    expect(statSync(ws2.dir).ino).toBe(parkedIno); // it was reused, not cloned
    expect(git(ws2.dir, 'status', '--porcelain', '--ignored', '--untracked-files=all')).toBe('');
    expect(git(ws2.dir, 'rev-parse', 'HEAD^{tree}')).toBe(git(fresh.dir, 'rev-parse', 'HEAD^{tree}'));
    expect(await ws2.head()).toBe(tip);
    expect(snapshot(ws2.dir)).toEqual(snapshot(fresh.dir));
    // The .git is the mirror's: no planted hook or config, nothing ran, origin is the real remote.
    expect(readdirSync(join(ws2.dir, '.git/hooks')).filter((h) => !h.endsWith('.sample'))).toEqual([]);
    expect(readFileSync(join(ws2.dir, '.git/config'), 'utf8')).not.toMatch(/planted|fsmonitor/);
    expect(readFileSync(join(ws2.dir, '.git/config'), 'utf8')).toBe(readFileSync(join(fresh.dir, '.git/config'), 'utf8').replaceAll('goal/fresh', 'goal/g2'));
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(join(outside, 'guide.md'), 'utf8')).toBe('# guide\n'); // the link was replaced, not followed
    expect(git(ws2.dir, 'fsck', '--no-progress')).toBe('');
    expect(await cache.warm.list()).toEqual([]);
  });

  it('never hands a tree parked for one remote to a goal on another', async () => {
    const { root, repo, cache, make } = await mirrorSetup();
    const other = await createSampleRepo(join(root, 'other'), { 'other.txt': 'other\n' });
    const ws1 = make('g1');
    await ws1.prepare();
    await ws1.release();
    const [parked] = await cache.warm.list();
    const parkedIno = statSync(parked!.path).ino;

    const onOther = make('g2', { remote: other.bare });
    await onOther.prepare();
    expect(statSync(onOther.dir).ino).not.toBe(parkedIno);
    expect(readdirSync(onOther.dir).sort()).toEqual(['.git', 'other.txt']);
    expect((await cache.warm.list()).map((p) => p.path)).toEqual([parked!.path]);

    const onSame = make('g3', { remote: repo.bare });
    await onSame.prepare();
    expect(statSync(onSame.dir).ino).toBe(parkedIno);
  });

  it('two preparations at once never take the same parked tree', async () => {
    const { repo, cache, make } = await mirrorSetup();
    const ws1 = make('g1');
    await ws1.prepare();
    await ws1.release();
    const parkedIno = statSync((await cache.warm.list())[0]!.path).ino;

    // Two caches on one folder stand for two workers.
    const other = new MirrorCache({ dir: cache.dir, fetchIntervalMs: 0, warmMinFiles: 0 });
    const racers = Array.from({ length: 4 }, (_, i) => make(`r${i}`, i % 2 ? { cache: other } : {}));
    await Promise.all(racers.map((w) => w.prepare()));
    expect(racers.filter((w) => statSync(w.dir).ino === parkedIno)).toHaveLength(1);
    const tip = git(repo.bare, 'rev-parse', 'main');
    for (const w of racers) {
      expect(await w.head()).toBe(tip);
      expect(git(w.dir, 'status', '--porcelain', '--ignored')).toBe('');
    }
  });

  it('resumes a goal from its branch in a parked tree, and pushes checkpoints to the real remote', async () => {
    const { repo, make } = await mirrorSetup();
    const ws = make('g1');
    await ws.prepare();
    writeFileSync(join(ws.dir, 'a.txt'), 'a\n');
    const cp = await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'Add a', attempt: 1 });
    writeFileSync(join(ws.dir, 'a.txt'), 'uncommitted\n');
    await ws.release();

    const again = make('g1');
    expect(await again.prepare()).toEqual([{ taskId: 't1', sha: cp.sha, attempt: 1 }]);
    expect(readFileSync(join(again.dir, 'a.txt'), 'utf8')).toBe('a\n');
    writeFileSync(join(again.dir, 'b.txt'), 'b\n');
    const cp2 = await again.checkpoint({ goalId: 'g1', taskId: 't2', title: 'Add b', attempt: 1 });
    expect(git(repo.bare, 'rev-parse', 'goal/g1')).toBe(cp2.sha);
    await again.rollback();
    expect(git(again.dir, 'status', '--porcelain', '--ignored')).toBe('');
  });

  it('never writes the remote token to any file, parked or reused', async () => {
    const TOKEN = 'ghs_warm_token_never_on_disk';
    const { root, repo, cache } = await mirrorSetup();
    const make = (goalId: string) =>
      new GitWorkspace({
        remote: repo.bare,
        dir: join(root, 'workspaces', 'sample', goalId),
        goalId,
        branch: `goal/${goalId}`,
        identity: { name: 'bot', email: 'bot@example.com' },
        remoteConfig: () => ({ 'http.https://github.com/.extraHeader': `AUTHORIZATION: basic ${TOKEN}` }),
        mirrorCache: cache,
      });
    const ws1 = make('g1');
    await ws1.prepare();
    writeFileSync(join(ws1.dir, 'f.txt'), 'x');
    await ws1.checkpoint({ goalId: 'g1', taskId: 't', title: 'f', attempt: 1 });
    await ws1.release();
    const ws2 = make('g2');
    await ws2.prepare();
    expect(statSync(ws2.dir).isDirectory()).toBe(true);
    const leaks = allFiles(root).filter((f) => readFileSync(f).includes(TOKEN));
    expect(leaks).toEqual([]);
  });
});
