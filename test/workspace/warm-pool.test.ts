import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MirrorCache } from '../../src/workspace/mirror-cache.js';
import { mirrorSetup } from './mirror-helpers.js';

/** Three goals on one repository, prepared, then released oldest first. */
async function threeReleased(perRemote?: number) {
  const s = await mirrorSetup(perRemote === undefined ? {} : { warmPerRemote: perRemote });
  const workspaces = ['g1', 'g2', 'g3'].map((g) => s.make(g));
  for (const ws of workspaces) await ws.prepare();
  const inodes: number[] = [];
  for (const ws of workspaces) {
    inodes.push(statSync(ws.dir).ino);
    await ws.release();
  }
  return { ...s, workspaces, inodes };
}

describe('pool of parked trees', () => {
  it('keeps at most two trees per remote, the most recently released', async () => {
    const { cache, inodes } = await threeReleased();
    const parked = await cache.warm.list();
    expect(parked.map((p) => statSync(p.path).ino)).toEqual(inodes.slice(1));
    expect(parked.every((p) => p.bytes > 0 && !existsSync(join(p.path, '.git')))).toBe(true);
    expect(readdirSync(join(cache.warm.dir, parked[0]!.key)).filter((n) => n.startsWith('.'))).toEqual([]); // no leftovers
  });

  it('release keeps removing the logs and the trusted config copy, and deletes the tree when parking is off', async () => {
    const { cache, make } = await mirrorSetup({ warmPerRemote: 0 });
    const ws = make('g1');
    await ws.prepare();
    await mkdir(`${ws.dir}.logs`, { recursive: true });
    await writeFile(join(`${ws.dir}.logs`, 'task.log'), 'x');
    await ws.release();
    for (const p of [ws.dir, `${ws.dir}.logs`, `${ws.dir}.trusted-gitconfig`]) expect(existsSync(p), p).toBe(false);
    expect(await cache.warm.list()).toEqual([]);
  });

  it('deletes a released tree with fewer files than the minimum; the next goal gets a fresh clone, not what the first left', async () => {
    const { cache, make } = await mirrorSetup({ warmMinFiles: 6 });
    const first = make('g1');
    await first.prepare();
    await writeFile(join(first.dir, 'left-behind.txt'), 'from g1');
    await writeFile(join(first.dir, 'README.md'), 'rewritten by g1');
    await first.release();
    expect(existsSync(first.dir)).toBe(false);
    expect(await cache.warm.list()).toEqual([]);
    const second = make('g2');
    await second.prepare();
    expect(existsSync(join(second.dir, 'left-behind.txt'))).toBe(false);
    expect(await second.changedFiles()).toEqual([]);

    // One file more than the minimum: parked, and taken by the next goal.
    await writeFile(join(second.dir, 'sixth.txt'), 'x');
    await writeFile(join(second.dir, 'seventh.txt'), 'x');
    await second.release();
    expect(await cache.warm.list()).toHaveLength(1);
  });

  it('counts parked trees toward the bound and evicts them, oldest first, before any mirror', async () => {
    const { repo, cache } = await threeReleased();
    const mirror = cache.pathFor(repo.bare);
    const [older, newer] = await cache.warm.list();
    const mirrorBytes = (await cache.list())[0]!.bytes;

    const roomForOne = new MirrorCache({ dir: cache.dir, maxBytes: mirrorBytes + newer!.bytes });
    expect(await roomForOne.evict()).toEqual([older!.path]);
    // The mirror was used before the trees were parked, yet the trees go first.
    expect(await new MirrorCache({ dir: cache.dir, maxBytes: mirrorBytes }).evict()).toEqual([newer!.path]);
    expect(existsSync(mirror)).toBe(true);
    expect(await new MirrorCache({ dir: cache.dir, maxBytes: 0 }).evict()).toEqual([mirror]);
    expect(readdirSync(cache.warm.dir).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('a parked tree evicted by the bound is not taken: the next goal clones from the mirror', async () => {
    const { repo, cache, make } = await threeReleased();
    await new MirrorCache({ dir: cache.dir, maxBytes: (await cache.list())[0]!.bytes }).evict();
    const ws = make('g4');
    await ws.prepare();
    expect(await ws.head()).toBe((await import('../helpers/git.js')).git(repo.bare, 'rev-parse', 'main'));
  });
});
