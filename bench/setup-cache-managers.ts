import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** Real dependencies: jest pulls some 270 packages (about 5,000 files, 24 MB). */
export const DEPENDENCIES: Record<string, string> = { jest: '29.7.0' };
const PRIME_TIMEOUT_MS = 300_000;

/** What a setup-cache line installs, and how: a lockfile the bench repository commits, and an offline setup. */
export interface PrimedInstall {
  /** The lockfile's name and its text. */
  lockfile: [name: string, text: string];
  packages: number;
  /** The repository's setup command: offline, from what the prime left. */
  setup: string;
  /** For the report: the command without its paths. */
  shown: string;
}

export interface PackageManager {
  name: 'npm' | 'pnpm';
  /**
   * Installs once in `dir` (its package.json written), online through the host's own npm
   * settings (proxy, CA), into a cache or store under `store`; undefined when the registry
   * (or the package manager) cannot be reached.
   */
  prime(dir: string, store: string): PrimedInstall | undefined;
}

export const npm: PackageManager = {
  name: 'npm',
  prime(dir, cache) {
    // Resolved URLs kept so the lockfile stands alone.
    if (
      !install(dir, 'npm', [
        'install',
        '--cache',
        cache,
        '--prefer-online',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        '--no-update-notifier',
        '--omit-lockfile-registry-resolved=false',
        '--loglevel=error',
      ])
    )
      return undefined;
    const text = readFileSync(join(dir, 'package-lock.json'), 'utf8');
    const packages = Object.keys((JSON.parse(text) as { packages?: Record<string, unknown> }).packages ?? {}).filter((p) => p !== '').length;
    return {
      lockfile: ['package-lock.json', text],
      packages,
      setup: `npm ci --offline --cache ${cache} --no-audit --no-fund --ignore-scripts --no-update-notifier --loglevel=error`,
      shown: 'npm ci --offline',
    };
  },
};

export const pnpm: PackageManager = {
  name: 'pnpm',
  prime(dir, store) {
    // The project's own pnpm (a devDependency), by absolute path: the sandbox's PATH has node, not node_modules/.bin.
    const bin = pnpmBin();
    if (bin === undefined || !install(dir, bin, ['install', '--store-dir', store, '--ignore-scripts', '--reporter=silent'])) return undefined;
    // One folder per package (and `node_modules`, `lock.yaml`) in pnpm's virtual store.
    const packages = readdirSync(join(dir, 'node_modules', '.pnpm')).filter((n) => n.includes('@')).length;
    return {
      lockfile: ['pnpm-lock.yaml', readFileSync(join(dir, 'pnpm-lock.yaml'), 'utf8')],
      packages,
      // Copied out of the store, as in the jail, where the store is bound in (another mount): a
      // hard link from the same filesystem would be faster than any goal-loop setup can be.
      setup: `${bin} install --frozen-lockfile --offline --store-dir ${store} --package-import-method=copy --ignore-scripts --reporter=silent`,
      shown: 'pnpm install --frozen-lockfile --offline',
    };
  },
};

/** The package.json every line's repository commits. */
export function packageJson(): string {
  return `${JSON.stringify({ name: 'setup-cache-bench', version: '1.0.0', private: true, dependencies: DEPENDENCIES }, null, 2)}\n`;
}

function install(dir: string, command: string, args: string[]): boolean {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), packageJson());
  try {
    execFileSync(command, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: PRIME_TIMEOUT_MS });
    return true;
  } catch {
    return false;
  }
}

/** node_modules/.bin/pnpm of the nearest node_modules that has one (pnpm's exports hide its package.json). */
function pnpmBin(): string | undefined {
  const dirs = createRequire(import.meta.url).resolve.paths('pnpm') ?? [];
  return dirs.map((d) => join(d, '.bin', 'pnpm')).find((bin) => existsSync(bin));
}
