import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PackageStores } from '../../src/workspace/package-stores.js';
import { SetupCache } from '../../src/workspace/setup-cache.js';
import { git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { jail } from '../helpers/sandbox-jail.js';

/**
 * A dependency from a tarball in the repository: pnpm adds it to its store, offline. The
 * `packageManager` pin names a pnpm the host does not have: pnpm 10 would fetch it for every
 * command, and tasks have no network.
 */
const FILES = {
  'package.json': JSON.stringify(
    { name: 'app', version: '1.0.0', private: true, packageManager: 'pnpm@9.15.0', dependencies: { 'left-pad-local': 'file:./vendor/left-pad-local-1.0.0.tgz' } },
    null,
    2,
  ),
};

/** Every path under `dir`, relative, links not followed. */
function walk(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    out.push(rel);
    if (e.isDirectory()) out.push(...walk(join(dir, e.name), rel));
  }
  return out;
}

describe("pnpm with the repository's package store, in the jail", () => {
  it('the store lives outside the workspace, the setup cache keeps node_modules only, and the next goal starts from both', async () => {
    const h = await goalHarness({ sandbox: jail(), files: FILES });
    // The tarball and the lockfile pnpm computes for it, committed on main.
    const pkg = join(h.root, 'pack', 'package');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'left-pad-local', version: '1.0.0', main: 'index.js' }));
    writeFileSync(join(pkg, 'index.js'), "module.exports = (s, n) => String(s).padStart(n, ' ');\n");
    mkdirSync(join(h.repo.work, 'vendor'));
    execFileSync('tar', ['czf', join(h.repo.work, 'vendor', 'left-pad-local-1.0.0.tgz'), '-C', join(h.root, 'pack'), 'package']);
    execFileSync('pnpm', ['--config.manage-package-manager-versions=false', 'install', '--lockfile-only', '--offline', '--store-dir', join(h.root, 'scratch-store'), '--reporter=silent'], {
      cwd: h.repo.work,
    });
    rmSync(join(h.root, 'scratch-store'), { recursive: true, force: true });
    git(h.repo.work, 'add', '--all');
    git(h.repo.work, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'pnpm');
    git(h.repo.work, 'push', '-q', 'origin', 'main');

    const setupCache = new SetupCache({ root: join(h.root, 'setup-cache'), maxBytes: 1 << 30 });
    const packageStores = new PackageStores({ root: join(h.root, 'package-stores'), maxBytes: 1 << 30 });
    const ws = (id: string) => ({ setupCache, packageStores, setupInputs: ['package.json', 'pnpm-lock.yaml'], dir: join(h.root, 'ws', id) });
    // No --store-dir: where the store goes is goal-loop's to say.
    const setup = ['pnpm install --offline --frozen-lockfile --reporter=silent'];
    const goal = (id: string) => ({
      goal_id: id,
      objective: 'o',
      tasks: [
        { id: 'pad', title: 'Pad', run: `node -e "require('fs').writeFileSync('${id}.txt', require('left-pad-local')('x', 3))"`, verification: `test "$(cat ${id}.txt)" = "  x" && pnpm --version` },
      ],
    });
    const setupRuns = async (id: string) => (await h.ledger.listAttempts({ repo: h.repo.bare, goalId: id })).filter((a) => a.taskId === 'setup').length;

    const first = await h.run(goal('one'), { setup }, ws('one'));
    expect(first.status, first.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('one')).toBe(1);
    const wsFiles = walk(join(h.root, 'ws', 'one')).filter((p) => !p.startsWith('.git'));
    expect(wsFiles.filter((p) => /(^|\/)\.pnpm-store(\/|$)/.test(p))).toEqual([]);
    // pnpm's store, outside: its content-addressed files under the repository's folder.
    const storeFiles = walk(join(h.root, 'package-stores'));
    expect(storeFiles.some((p) => /\/store\/pnpm\/v\d+\/files\//.test(p))).toBe(true);
    expect(git(h.repo.bare, 'show', '--name-only', '--format=', 'goal/one')).toBe('one.txt');
    await setupCache.idle();

    // The setup cache's entry: node_modules, not the store a second time.
    const cacheRoot = join(h.root, 'setup-cache');
    const [repoDir] = readdirSync(cacheRoot);
    const [entry] = readdirSync(join(cacheRoot, repoDir!)).filter((n) => /^[0-9a-f]{64}$/.test(n));
    expect(readdirSync(join(cacheRoot, repoDir!, entry!, 'tree'))).toEqual(['node_modules']);

    const second = await h.run(goal('two'), { setup }, ws('two'));
    expect(second.status, second.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('two')).toBe(0);
    expect(lstatSync(join(h.root, 'ws', 'two', 'node_modules', 'left-pad-local')).isSymbolicLink()).toBe(true);
    expect(existsSync(join(h.root, 'ws', 'two', '.pnpm-store'))).toBe(false);
    await setupCache.idle();
  });
});
