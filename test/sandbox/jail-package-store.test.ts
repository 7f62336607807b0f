import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SandboxUnavailableError } from '../../src/ports/sandbox.js';
import { PackageStores } from '../../src/workspace/package-stores.js';
import { jail, jailRoot, runIn } from '../helpers/sandbox-jail.js';

// Setup's package store is a host folder bound read-write into setup's jail only: what setup
// downloads survives for the next goal of the repository, and nothing else of the host opens up.
describe("setup's package store in the jail", () => {
  for (const jailMode of ['nested', 'direct'] as const) {
    it(`(${jailMode}) setup writes into the store at its host path; nothing beside it reaches the host`, async () => {
      const { root, ws } = await jailRoot();
      chmodSync(root, 0o755); // direct: the jail uid must reach the workspace
      const store = join(root, 'stores', 'app-store');
      mkdirSync(store, { recursive: true });
      // The folders on the way are the jail's own (in direct mode, in its private /tmp): a write there stays there.
      const command = ['echo cached > "$npm_config_cache/tarball" && echo WROTE', `echo x > "${join(root, 'stores')}/beside" 2>/dev/null`, 'true'].join('; ');
      const result = await runIn(jail({ jailMode }), ws, command, { packageStore: { dir: store, env: { npm_config_cache: store } } });
      expect(result.output).toContain('WROTE');
      expect(readFileSync(join(store, 'tarball'), 'utf8')).toBe('cached\n');
      expect(existsSync(join(root, 'stores', 'beside'))).toBe(false);
      if (process.getuid?.() === 0 && jailMode === 'nested') expect(statSync(join(store, 'tarball')).uid).not.toBe(0);
    });
  }

  it('(direct, as a root bot runs it) a store PackageStores made is reachable by the jail uid, which binds it', async () => {
    const { root, ws } = await jailRoot();
    chmodSync(root, 0o755); // the jail uid must reach the workspace, as under GOAL_LOOP_WORKSPACES
    const grant = await new PackageStores({ root: join(root, 'package-stores'), maxBytes: 1 << 30 }).claim('/r/app', 'main', true);
    const result = await runIn(jail({ jailMode: 'direct' }), ws, 'echo cached > "$npm_config_cache" && echo WROTE', {
      packageStore: { dir: grant.dir, env: { npm_config_cache: join(grant.dir, 'tarball') } },
    });
    expect(result.output).toContain('WROTE');
    expect(readFileSync(join(grant.dir, 'tarball'), 'utf8')).toBe('cached\n');
    await grant.release();
  });

  it('a command without the store (a task, a verification) neither sees it nor gets its variables', async () => {
    const { root, ws } = await jailRoot();
    const store = join(root, 'stores', 'app-store');
    mkdirSync(store, { recursive: true });
    const sandbox = jail();
    await runIn(sandbox, ws, 'echo secret-package > "$npm_config_cache/pkg"', { packageStore: { dir: store, env: { npm_config_cache: store } } });
    const task = await runIn(sandbox, ws, `echo "cache=$npm_config_cache"; cat "${store}/pkg" 2>&1; ls "${store}" 2>&1 | head -1`);
    expect(task.output).toContain('cache=\n');
    expect(task.output).not.toContain('secret-package');
  });

  it('attack: a store that is a link, inside the workspace, or holding it, is refused before anything runs', async () => {
    const { root, ws } = await jailRoot();
    const real = join(root, 'real-store');
    mkdirSync(real);
    const link = join(root, 'link-store');
    symlinkSync(real, link);
    const inside = join(ws, 'node_modules', '.store');
    mkdirSync(inside, { recursive: true });
    const sandbox = jail();
    for (const dir of [link, inside, root, 'relative/store', join(root, 'missing')]) {
      await expect(runIn(sandbox, ws, 'echo RAN', { packageStore: { dir, env: {} } }), dir).rejects.toBeInstanceOf(SandboxUnavailableError);
    }
  });
});
