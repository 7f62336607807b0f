import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { MirrorCache } from '../../src/workspace/mirror-cache.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { mirrorSetup, packs, pushCommit } from './mirror-helpers.js';

describe('workspaces prepared from a mirror', () => {
  it('a second goal fetches only the new objects into the mirror, and its workspace has the new commit', async () => {
    const files = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`src/d${i % 6}/f${i}.js`, `export const v${i} = ${i};\n`]));
    const { repo, cache, make } = await mirrorSetup({}, files);
    await make('g1').prepare();
    const mirror = cache.pathFor(repo.bare);
    const before = packs(mirror);
    const history = [...before.values()].reduce((a, b) => a + b, 0);
    const oldTip = git(repo.bare, 'rev-parse', 'main');

    const newTip = pushCommit(repo, 'src/d1/f1.js', 'export const v1 = 100;\n');
    const newObjects = git(repo.bare, 'rev-list', '--objects', `${oldTip}..${newTip}`).split('\n').filter(Boolean).length;
    const ws2 = make('g2');
    await ws2.prepare();

    expect(await ws2.head()).toBe(newTip);
    const after = packs(mirror);
    const added = [...after].filter(([name]) => !before.has(name));
    // One new pack with the commit, its trees and the changed blob (plus the delta bases a thin
    // pack is completed with): a handful of objects, not the history again.
    expect(added).toHaveLength(1);
    expect(added[0]![1]).toBeGreaterThanOrEqual(newObjects);
    expect(added[0]![1]).toBeLessThanOrEqual(2 * newObjects);
    expect(history).toBeGreaterThan(10 * newObjects);
    expect(git(mirror, 'rev-parse', 'main')).toBe(newTip);
    // The workspace talks to the real remote, not the mirror, and carries no alternates.
    expect(git(ws2.dir, 'config', '--get', 'remote.origin.url')).toBe(repo.bare);
    expect(existsSync(join(ws2.dir, '.git', 'objects', 'info', 'alternates'))).toBe(false);
  });

  it('tops a recently fetched mirror up from the remote itself, so a second goal still sees new commits', async () => {
    const { repo, cache, make } = await mirrorSetup({ fetchIntervalMs: 60_000 });
    await make('g1').prepare();
    const mirror = cache.pathFor(repo.bare);
    const oldTip = git(mirror, 'rev-parse', 'main');
    const newTip = pushCommit(repo, 'NOTES.md', 'new\n');

    const ws2 = make('g2');
    await ws2.prepare();
    expect(await ws2.head()).toBe(newTip);
    expect(git(mirror, 'rev-parse', 'main')).toBe(oldTip); // not fetched again within the interval
    expect(git(ws2.dir, 'rev-parse', 'refs/remotes/origin/main')).toBe(newTip);
  });

  it('resumes a goal whose checkpoints are on the remote, and pushes new checkpoints to the real remote', async () => {
    const { repo, make } = await mirrorSetup();
    const ws = make('g1');
    await ws.prepare();
    await writeFile(join(ws.dir, 'a.txt'), 'a\n');
    const cp = await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'Add a', attempt: 1 });
    expect(git(repo.bare, 'rev-parse', 'goal/g1')).toBe(cp.sha);
    await ws.release();

    const again = make('g1');
    expect(await again.prepare()).toEqual([{ taskId: 't1', sha: cp.sha, attempt: 1 }]);
    expect(await again.head()).toBe(cp.sha);
    expect(checkpointCommits(repo.bare, 'goal/g1').map((c) => c.task)).toEqual(['t1']);
  });

  it('prepares several goals of one repository at once, with one mirror and no leftovers', async () => {
    const { repo, cache, make } = await mirrorSetup();
    // Two caches on one folder stand for two workers; each runs several preparations at once.
    const other = new MirrorCache({ dir: cache.dir, fetchIntervalMs: 0, warmMinFiles: 0 });
    const workspaces = Array.from({ length: 6 }, (_, i) => make(`g${i}`, i % 2 ? { cache: other } : {}));
    pushCommit(repo, 'b.txt', 'b\n');
    await Promise.all(workspaces.map((w) => w.prepare()));
    const tip = git(repo.bare, 'rev-parse', 'main');
    for (const w of workspaces) expect(await w.head()).toBe(tip);
    expect(readdirSync(cache.dir).filter((n) => n.endsWith('.git'))).toEqual([basenameOf(cache.pathFor(repo.bare))]);
    expect(readdirSync(cache.dir).filter((n) => n.startsWith('.') || n.endsWith('.lock'))).toEqual([]);
    expect(git(cache.pathFor(repo.bare), 'fsck', '--no-progress')).toBe('');
  });

  it('keeps the token out of the mirror and the workspace: on disk and in argv', async () => {
    const TOKEN = 'ghs_mirror_token_never_on_disk';
    const { root, repo, cache } = await mirrorSetup();
    const savedPath = process.env.PATH;
    const bin = join(root, 'bin');
    const log = join(root, 'git-calls.log');
    mkdirSync(bin);
    writeFileSync(join(bin, 'git'), `#!/bin/sh\n{ echo "ARGV $*"; env | grep '^GIT_CONFIG_VALUE' | sed 's/^/ENV /'; } >> ${log}\nexec /usr/bin/git "$@"\n`);
    chmodSync(join(bin, 'git'), 0o755);
    process.env.PATH = `${bin}:${savedPath}`;
    try {
      const withToken = (goalId: string) =>
        new GitWorkspace({
          remote: repo.bare,
          dir: join(root, 'workspaces', 'sample', goalId),
          goalId,
          branch: `goal/${goalId}`,
          identity: { name: 'bot', email: 'bot@example.com' },
          mirrorCache: cache,
          remoteConfig: () => ({ 'http.https://github.com/.extraHeader': `AUTHORIZATION: basic ${TOKEN}` }),
        });
      const ws1 = withToken('g1');
      await ws1.prepare(); // creates the mirror
      const ws2 = withToken('g2');
      await ws2.prepare(); // fetches it
      await writeFile(join(ws2.dir, 'f.txt'), 'x');
      await ws2.checkpoint({ goalId: 'g2', taskId: 't', title: 'f', attempt: 1 });
    } finally {
      process.env.PATH = savedPath;
    }
    const calls = readFileSync(log, 'utf8');
    const blocks = calls.split(/(?=^ARGV )/m).filter(Boolean);
    expect(blocks.filter((b) => b.split('\n')[0]!.includes(TOKEN))).toEqual([]);
    // The mirror's creation and fetch did carry it (in the environment).
    const mirrorFetch = blocks.find((b) => /^ARGV fetch .*refs\/heads\/\*/.test(b));
    expect(mirrorFetch).toContain(TOKEN);
    expect(blocks.find((b) => /^ARGV clone .*--bare/.test(b))).toContain(TOKEN);
    for (const file of filesUnder(join(root, 'workspaces'))) expect(readFileSync(file).includes(TOKEN), file).toBe(false);
  });

  it('a write in the workspace .git (a sandboxed command) cannot alter the mirror objects', async () => {
    const { repo, cache, make } = await mirrorSetup();
    const ws = make('g1');
    await ws.prepare();
    const mirror = cache.pathFor(repo.bare);
    const mirrorPacks = readdirSync(join(mirror, 'objects', 'pack')).filter((n) => n.endsWith('.pack'));
    const before = mirrorPacks.map((n) => readFileSync(join(mirror, 'objects', 'pack', n)));
    for (const n of mirrorPacks) {
      const wsPack = join(ws.dir, '.git', 'objects', 'pack', n);
      expect(statSync(wsPack).ino).not.toBe(statSync(join(mirror, 'objects', 'pack', n)).ino);
    }

    // In-place overwrite (no new inode), as root or after a chmod: what a hardlinked clone would leak.
    const result = await new ProcessSandbox().run({
      command: 'chmod -R u+w .git/objects && for f in .git/objects/pack/*; do printf garbage | dd of="$f" conv=notrunc status=none; done',
      cwd: ws.dir,
      timeoutMs: 30_000,
    });
    expect(result.exitCode, result.output).toBe(0);

    for (const [i, n] of mirrorPacks.entries()) expect(readFileSync(join(mirror, 'objects', 'pack', n)).equals(before[i]!)).toBe(true);
    expect(git(mirror, 'fsck', '--no-progress')).toBe('');
    const next = make('g2');
    await next.prepare();
    expect(await next.head()).toBe(git(repo.bare, 'rev-parse', 'main'));
  });
});

function basenameOf(path: string): string {
  return path.split('/').pop()!;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}
