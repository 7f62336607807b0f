import { existsSync, lstatSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { mkdir, readdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SetupCache } from '../../src/workspace/setup-cache.js';
import { tempDir } from '../helpers/temp.js';

const KEY = SetupCache.key({ base: 'main', commands: ['npm ci'], network: true, inputs: [['package-lock.json', 'a'.repeat(40)]] });

/** A workspace after setup: a dependency folder with a link inside, and a rewritten lockfile. */
async function installed(dir: string): Promise<void> {
  await mkdir(join(dir, 'node_modules', 'dep'), { recursive: true });
  await writeFile(join(dir, 'node_modules', 'dep', 'index.js'), 'module.exports = 1;\n');
  symlinkSync('dep/index.js', join(dir, 'node_modules', 'main.js'));
  await writeFile(join(dir, 'package-lock.json'), '{"lockfileVersion":3}\n');
}

describe('SetupCache', () => {
  it('keeps setup output per repository and key, and puts it back as it was (links stay links)', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30 });
    await installed(join(root, 'ws1'));
    await cache.save('https://x/app.git', KEY, join(root, 'ws1'), ['node_modules/', 'package-lock.json']);
    await mkdir(join(root, 'ws2'));
    expect(await cache.restore('https://x/app.git', KEY, join(root, 'ws2'))).toBe('restored');
    expect(readFileSync(join(root, 'ws2', 'node_modules', 'dep', 'index.js'), 'utf8')).toBe('module.exports = 1;\n');
    expect(lstatSync(join(root, 'ws2', 'node_modules', 'main.js')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(root, 'ws2', 'package-lock.json'), 'utf8')).toContain('lockfileVersion');
    // Never shared across repositories, nor across keys.
    await mkdir(join(root, 'ws3'));
    expect(await cache.restore('https://x/other.git', KEY, join(root, 'ws3'))).toBe('missing');
    expect(await cache.restore('https://x/app.git', SetupCache.key({ base: 'main', commands: ['npm ci'], network: true, inputs: [] }), join(root, 'ws3'))).toBe('missing');
    expect(await readdir(join(root, 'ws3'))).toEqual([]);
  });

  it('hands a restore the folders that were untracked when saved (of those it kept), as the hint for its first look', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30, readyCopies: false });
    await installed(join(root, 'ws1'));
    await cache.save('r', KEY, join(root, 'ws1'), ['node_modules/', 'package-lock.json'], ['node_modules/', 'not-kept/']);
    await mkdir(join(root, 'ws2'));
    const restored: unknown[] = [];
    expect(await cache.restore('r', KEY, join(root, 'ws2'), { onRestored: (r) => restored.push(r) })).toBe('restored');
    expect(restored).toEqual([{ paths: ['node_modules', 'package-lock.json'], untrackedDirs: ['node_modules'] }]);
  });

  it('a corrupt entry is removed and rebuilt, never trusted', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30 });
    await installed(join(root, 'ws1'));
    await cache.save('r', KEY, join(root, 'ws1'), ['node_modules/']);
    const [repoDir] = await readdir(join(root, 'cache'));
    const entry = join(root, 'cache', repoDir!, KEY);
    await writeFile(join(entry, 'manifest.json'), '{"version":1,"key":"nope"');
    await mkdir(join(root, 'ws2'));
    expect(await cache.restore('r', KEY, join(root, 'ws2'))).toBe('missing');
    expect(existsSync(entry)).toBe(false);
    // A manifest listing a path the entry lacks: also removed.
    await cache.save('r', KEY, join(root, 'ws1'), ['node_modules/']);
    await writeFile(join(entry, 'manifest.json'), JSON.stringify({ version: 2, key: KEY, paths: ['node_modules', 'gone'], bytes: 1 }));
    expect(await cache.restore('r', KEY, join(root, 'ws2'))).toBe('missing');
    expect(existsSync(entry)).toBe(false);
  });

  it('evicts the least recently used entries beyond its bound', async () => {
    const root = await tempDir();
    await installed(join(root, 'ws'));
    const keys = ['a', 'b'].map((c) => SetupCache.key({ base: 'main', commands: [c], network: false, inputs: [] }));
    const probe = new SetupCache({ root: join(root, 'probe'), maxBytes: 1 << 30, readyCopies: false });
    await probe.save('r', keys[0]!, join(root, 'ws'), ['node_modules/']);
    const [probeRepo] = await readdir(join(root, 'probe'));
    const bytes = JSON.parse(readFileSync(join(root, 'probe', probeRepo!, keys[0]!, 'manifest.json'), 'utf8')).bytes as number;
    expect(bytes).toBeGreaterThan(0);
    // Room for one entry, not two: the save of the second evicts the first.
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: Math.floor(bytes * 1.5), readyCopies: false });
    await cache.save('r', keys[0]!, join(root, 'ws'), ['node_modules/']);
    await cache.save('r', keys[1]!, join(root, 'ws'), ['node_modules/']);
    await mkdir(join(root, 'out'));
    expect(await cache.restore('r', keys[0]!, join(root, 'out'))).toBe('missing');
    expect(await cache.restore('r', keys[1]!, join(root, 'out'))).toBe('restored');
  });

  it('keeps nothing of a setup output that alone exceeds the bound (so it evicts nothing)', async () => {
    const root = await tempDir();
    await installed(join(root, 'ws'));
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 });
    await cache.save('r', KEY, join(root, 'ws'), ['node_modules/']);
    await mkdir(join(root, 'out'));
    expect(await cache.restore('r', KEY, join(root, 'out'))).toBe('missing');
    expect(await readdir(join(root, 'cache', (await readdir(join(root, 'cache')))[0]!))).toEqual([]);
  });

  it('attack: a repository whose tree has a link where setup output goes gets nothing written through it', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30 });
    await installed(join(root, 'ws1'));
    await cache.save('r', KEY, join(root, 'ws1'), ['node_modules/']);
    const outside = join(root, 'outside');
    await mkdir(outside);
    await mkdir(join(root, 'ws2'));
    symlinkSync(outside, join(root, 'ws2', 'node_modules'));
    expect(await cache.restore('r', KEY, join(root, 'ws2'))).toBe('missing');
    expect(await readdir(outside)).toEqual([]);
  });

  it('attack: setup output under a folder setup swapped for a link to host files is not kept', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30 });
    const host = join(root, 'host-secrets');
    await mkdir(join(host, 'sub'), { recursive: true });
    await writeFile(join(host, 'sub', 'key'), 'secret');
    await mkdir(join(root, 'ws1'));
    symlinkSync(host, join(root, 'ws1', 'packages'));
    await cache.save('r', KEY, join(root, 'ws1'), ['packages/sub/']);
    await mkdir(join(root, 'ws2'));
    expect(await cache.restore('r', KEY, join(root, 'ws2'))).toBe('missing');
    expect(existsSync(join(root, 'ws2', 'packages'))).toBe(false);
  });

  it('attack: a setup output of sparse files larger than the bound is not kept, and evicts no other repository', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 16 << 20 });
    await installed(join(root, 'victim'));
    await cache.save('https://x/victim.git', KEY, join(root, 'victim'), ['node_modules/']);
    await cache.idle();
    // 5 GiB that cost nothing: no block is written.
    await mkdir(join(root, 'ws', 'junk'), { recursive: true });
    await writeFile(join(root, 'ws', 'junk', 'huge.bin'), '');
    await truncate(join(root, 'ws', 'junk', 'huge.bin'), 5 * 1024 ** 3);
    expect(statSync(join(root, 'ws', 'junk', 'huge.bin')).blocks).toBeLessThan(64);
    await cache.save('https://x/attacker.git', KEY, join(root, 'ws'), ['junk/']);
    await cache.idle();
    await mkdir(join(root, 'out1'));
    expect(await cache.restore('https://x/attacker.git', KEY, join(root, 'out1'))).toBe('missing');
    await mkdir(join(root, 'out2'));
    expect(await cache.restore('https://x/victim.git', KEY, join(root, 'out2'))).toBe('restored');
    await cache.idle();
  });

  it('attack: sparse files are charged the blocks they use, so one under the bound evicts nobody', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 8 << 20, readyCopies: false });
    await installed(join(root, 'victim'));
    await writeFile(join(root, 'victim', 'node_modules', 'dep', 'data.bin'), Buffer.alloc(1 << 20, 1));
    await cache.save('https://x/victim.git', KEY, join(root, 'victim'), ['node_modules/']);
    // 7.5 MiB apparent, nothing allocated: with the victim's 1 MiB, over the bound only if counted by apparent size.
    await mkdir(join(root, 'ws', 'junk'), { recursive: true });
    await writeFile(join(root, 'ws', 'junk', 'holes.bin'), '');
    await truncate(join(root, 'ws', 'junk', 'holes.bin'), 7.5 * 1024 * 1024);
    await cache.save('https://x/attacker.git', KEY, join(root, 'ws'), ['junk/']);
    await mkdir(join(root, 'out'));
    expect(await cache.restore('https://x/victim.git', KEY, join(root, 'out'))).toBe('restored');
    expect(readFileSync(join(root, 'out', 'node_modules', 'dep', 'data.bin')).length).toBe(1 << 20);
  });

  it('an entry an earlier version kept (maybe from a goal branch, with set-id bits) is never restored, and goes', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 << 30 });
    const old = join(root, 'cache', 'app-000000000000', 'a'.repeat(64));
    await mkdir(join(old, 'tree', 'node_modules'), { recursive: true });
    await writeFile(join(old, 'manifest.json'), JSON.stringify({ version: 1, key: 'a'.repeat(64), paths: ['node_modules'], bytes: 1 }));
    await cache.evict();
    expect(existsSync(old)).toBe(false);
  });
});
