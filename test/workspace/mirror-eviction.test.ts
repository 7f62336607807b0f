import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { Git } from '../../src/workspace/git.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { MirrorCache } from '../../src/workspace/mirror-cache.js';
import { git } from '../helpers/git.js';
import { foreignLock, mirrorSetup } from './mirror-helpers.js';

/** Three repositories, one goal workspace each, prepared oldest first (no parked trees: mirrors only). */
async function threeRepos() {
  const s = await mirrorSetup({ warmPerRemote: 0 });
  const remotes = [s.repo.bare];
  for (const name of ['two', 'three']) remotes.push((await createSampleRepo(join(s.root, name))).bare);
  const workspaces: GitWorkspace[] = [];
  for (const [i, remote] of remotes.entries()) {
    const ws = s.make(`g${i}`, { remote });
    await ws.prepare();
    workspaces.push(ws);
  }
  const mirrors = remotes.map((r) => s.cache.pathFor(r));
  const sizes = new Map((await s.cache.list()).map((m) => [m.path, m.bytes]));
  return { ...s, remotes, workspaces, mirrors, sizes };
}

describe('mirror cache bound', () => {
  it('evicts least recently used mirrors beyond the bound, never one pinned by a live workspace', async () => {
    const { cache, workspaces, mirrors, sizes } = await threeRepos();
    const bound = sizes.get(mirrors[1]!)! + sizes.get(mirrors[2]!)!; // room for two
    const small = new MirrorCache({ dir: cache.dir, maxBytes: bound });

    expect(await small.evict()).toEqual([]); // all three have live workspaces
    await workspaces[1]!.release(); // a middle one first: LRU order, not release order, decides
    await workspaces[0]!.release();
    expect(await small.evict()).toEqual([mirrors[0]]);
    expect(mirrors.map((m) => existsSync(m))).toEqual([false, true, true]);
    expect((await small.list()).reduce((a, m) => a + m.bytes, 0)).toBeLessThanOrEqual(bound);
  });

  it('skips a mirror locked by another process, and evicts the next one instead', async () => {
    const { cache, workspaces, mirrors } = await threeRepos();
    for (const ws of workspaces) await ws.release();
    foreignLock(`${mirrors[0]}.lock`);
    const tiny = new MirrorCache({ dir: cache.dir, maxBytes: 0 });
    expect(await tiny.evict()).toEqual([mirrors[1], mirrors[2]]);
    expect(existsSync(mirrors[0]!)).toBe(true);
  });

  it('never evicts the mirror a preparation is using, even when it alone exceeds the bound', async () => {
    const { root, repo } = await mirrorSetup();
    const cache = new MirrorCache({ dir: join(root, 'mirrors'), maxBytes: 1, fetchIntervalMs: 0 });
    const other = await createSampleRepo(join(root, 'other'));
    await cache.withMirror(other.bare, new Git(), async () => undefined);
    const used = await cache.withMirror(repo.bare, new Git(), async (m) => m.path);
    expect(existsSync(used)).toBe(true);
    expect(existsSync(cache.pathFor(other.bare))).toBe(false); // evicted while the other was in use
  });

  it('a workspace outlives the eviction of its mirror: no alternates, checkpoints still push', async () => {
    const { repo, cache, make } = await mirrorSetup();
    const ws = make('g1');
    await ws.prepare();
    await cache.unpin(repo.bare, ws.dir);
    expect(await new MirrorCache({ dir: cache.dir, maxBytes: 0 }).evict()).toEqual([cache.pathFor(repo.bare)]);

    expect(git(ws.dir, 'fsck', '--no-progress')).toBe('');
    await writeFile(join(ws.dir, 'after.txt'), 'x\n');
    const cp = await ws.checkpoint({ goalId: 'g1', taskId: 't1', title: 'after eviction', attempt: 1 });
    expect(git(repo.bare, 'rev-parse', 'goal/g1')).toBe(cp.sha);
    // The next goal rebuilds the mirror.
    const next = make('g2');
    await next.prepare();
    expect(existsSync(cache.pathFor(repo.bare))).toBe(true);
  });
});

describe('release', () => {
  it('removes the goal workspace, its trusted config copy and its logs, and unpins its mirror', async () => {
    const { repo, cache, make } = await mirrorSetup();
    const ws = make('g1');
    await ws.prepare();
    await mkdir(`${ws.dir}.logs`, { recursive: true });
    await writeFile(join(`${ws.dir}.logs`, 'task.log'), 'x');
    expect(readdirSync(`${cache.pathFor(repo.bare)}.pins`)).toHaveLength(1);

    await ws.release();
    for (const p of [ws.dir, `${ws.dir}.logs`, `${ws.dir}.trusted-gitconfig`]) expect(existsSync(p), p).toBe(false);
    expect(readdirSync(`${cache.pathFor(repo.bare)}.pins`)).toEqual([]);
    expect(existsSync(cache.pathFor(repo.bare))).toBe(true); // within the bound: kept for the next goal
  });

  it('works without a cache, and twice', async () => {
    const { root, repo } = await mirrorSetup();
    const ws = new GitWorkspace({ remote: repo.bare, dir: join(root, 'plain', 'g1'), goalId: 'g1', branch: 'goal/g1' });
    await ws.prepare();
    await ws.release();
    await ws.release();
    expect(existsSync(ws.dir)).toBe(false);
  });
});
