import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/build.js';
import { tempDir } from '../helpers/temp.js';

/**
 * What a user gets from `npm install goal-loop`: `npm pack` of this repository, installed into an
 * empty folder, then `goal-loop --version` and `goal-loop demo` from there. Offline, so that the
 * test does not depend on the registry: the folder gets a lockfile with the repository's own
 * production dependencies (what `npm ci` put in npm's cache), and the native addon of
 * better-sqlite3 is the one already built here (its install script would download or compile it).
 * `npm pack` skips `prepare` (the build): dist/ is the tests' build of the same sources, and the
 * image test runs the build command itself.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  license: string;
  bin: Record<string, string>;
  engines: unknown;
  dependencies: Record<string, string>;
  overrides?: unknown;
};

function run(file: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: opts.cwd, env: opts.env ?? process.env, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The repository's lockfile, cut to its production packages, with the tarball as the one dependency. */
function installLock(tarball: string): object {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
  const packages: Record<string, unknown> = {
    '': { name: 'try-goal-loop', dependencies: { [PKG.name]: `file:${tarball}` } },
    [`node_modules/${PKG.name}`]: { version: PKG.version, resolved: `file:${tarball}`, license: PKG.license, dependencies: PKG.dependencies, bin: PKG.bin, engines: PKG.engines },
  };
  for (const [key, entry] of Object.entries(lock.packages)) if (key.startsWith('node_modules/') && !entry.dev) packages[key] = entry;
  return { name: 'try-goal-loop', lockfileVersion: 3, requires: true, packages };
}

describe('the npm package', () => {
  it('npm pack, installed into an empty folder: goal-loop --version and goal-loop demo work from there', { timeout: 420_000 }, async () => {
    await ensureBuilt();
    const home = await tempDir('goal-loop-pack-');
    const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', home], { cwd: ROOT });
    expect(pack.code, pack.stderr).toBe(0);
    const [packed] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const files = packed!.files.map((f) => f.path);
    // What ships: the build, the manifest, the examples and the schema; no sources, tests or benchmarks.
    expect(files.filter((f) => !/^(package\.json|README\.md|CHANGELOG\.md|LICENSE|app\.yml|examples\/|schema\/|dist\/src\/)/.test(f))).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(['dist/src/cli/main.js', 'app.yml', 'examples/demo-goal.yml', 'package.json']));
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.repository).toMatchObject({ type: 'git', url: expect.stringMatching(/^git\+https:\/\/github\.com\/[^/]+\/[^/]+\.git$/) });

    // The empty folder, and the install.
    const app = join(home, 'app');
    mkdirSync(app);
    copyFileSync(join(home, packed!.filename), join(app, packed!.filename));
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'try-goal-loop', private: true, dependencies: { [PKG.name]: `file:${packed!.filename}` }, ...(PKG.overrides ? { overrides: PKG.overrides } : {}) }),
    );
    writeFileSync(join(app, 'package-lock.json'), JSON.stringify(installLock(packed!.filename)));
    const install = await run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: app });
    expect(install.code, `${install.stdout}${install.stderr}`).toBe(0);
    const addon = 'build/Release/better_sqlite3.node';
    const sqlite = join(app, 'node_modules', 'better-sqlite3');
    expect(JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')).version).toBe(JSON.parse(readFileSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8')).version);
    mkdirSync(dirname(join(sqlite, addon)), { recursive: true });
    copyFileSync(join(ROOT, 'node_modules/better-sqlite3', addon), join(sqlite, addon));

    // From the installed package, as a user without this repository would run it.
    const bin = join(app, 'node_modules', '.bin', 'goal-loop');
    const env: NodeJS.ProcessEnv = {
      PATH: [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(delimiter),
      HOME: home,
      XDG_STATE_HOME: join(home, 'state'),
      XDG_CACHE_HOME: join(home, 'cache'),
      NO_COLOR: '1',
      LOG_LEVEL: 'warn',
    };
    const version = await run(bin, ['--version'], { cwd: home, env });
    expect(version).toMatchObject({ code: 0, stdout: `${PKG.version}\n` });

    const demo = await run(bin, ['demo'], { cwd: home, env });
    expect(demo.stderr).not.toMatch(/internal error/);
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stderr).toMatch(/LOOP_COMPLETE 4\/4 tasks/);
    // Its hint runs as printed, and names the installed CLI.
    const hint = demo.stdout
      .split('\n')
      .find((l) => l.startsWith('Each attempt:'))!
      .slice('Each attempt:'.length)
      .trim();
    expect(hint).toContain(join(app, 'node_modules', PKG.name, 'dist/src/cli/main.js'));
    const logs = await run('sh', ['-c', hint], { env });
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/slug-tests · attempt 2/);
    const cleanup = /; when done: rm -rf (\S+)$/m.exec(demo.stdout)![1]!;
    await run('sh', ['-c', `rm -rf ${cleanup}`]);
    expect(existsSync(cleanup)).toBe(false);
  });
});
