import { existsSync, lstatSync, readFileSync, symlinkSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SetupCache } from '../../src/workspace/setup-cache.js';
import { tempDir } from '../helpers/temp.js';

const KEY = SetupCache.key({ commands: ['npm ci'], network: true, inputs: [['package-lock.json', 'a'.repeat(40)]] });

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
    expect(await cache.restore('https://x/app.git', SetupCache.key({ commands: ['npm ci'], network: true, inputs: [] }), join(root, 'ws3'))).toBe('missing');
    expect(await readdir(join(root, 'ws3'))).toEqual([]);
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
    await writeFile(join(entry, 'manifest.json'), JSON.stringify({ version: 1, key: KEY, paths: ['node_modules', 'gone'], bytes: 1 }));
    expect(await cache.restore('r', KEY, join(root, 'ws2'))).toBe('missing');
    expect(existsSync(entry)).toBe(false);
  });

  it('evicts the least recently used entries beyond its bound', async () => {
    const root = await tempDir();
    const cache = new SetupCache({ root: join(root, 'cache'), maxBytes: 1 });
    await installed(join(root, 'ws'));
    const keys = ['a', 'b'].map((c) => SetupCache.key({ commands: [c], network: false, inputs: [] }));
    await cache.save('r', keys[0]!, join(root, 'ws'), ['node_modules/']);
    await cache.save('r', keys[1]!, join(root, 'ws'), ['node_modules/']);
    await mkdir(join(root, 'out'));
    // Each entry alone exceeds 1 byte: only the newest is kept (the save evicts after writing).
    expect(await cache.restore('r', keys[0]!, join(root, 'out'))).toBe('missing');
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
});
