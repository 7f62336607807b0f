import { join } from 'node:path';

/** The JavaScript package managers whose store or cache setup gets outside the workspace. */
export type PackageManager = 'npm' | 'pnpm' | 'yarn-classic' | 'yarn-berry' | 'bun';

/**
 * The managers a tree uses, from the names of the files at its top level (a lockfile each; yarn
 * berry by its `.yarnrc.yml`). Names only: no file of the tree is read.
 */
export function detectPackageManagers(topLevelNames: ReadonlySet<string>): PackageManager[] {
  const found: PackageManager[] = [];
  if (topLevelNames.has('pnpm-lock.yaml')) found.push('pnpm');
  if (topLevelNames.has('yarn.lock')) found.push(topLevelNames.has('.yarnrc.yml') ? 'yarn-berry' : 'yarn-classic');
  if (topLevelNames.has('package-lock.json') || topLevelNames.has('npm-shrinkwrap.json')) found.push('npm');
  if (topLevelNames.has('bun.lock') || topLevelNames.has('bun.lockb')) found.push('bun');
  // A package.json alone is installed with npm (the no-setup hint says `npm install`).
  if (found.length === 0 && topLevelNames.has('package.json')) found.push('npm');
  return found;
}

/**
 * The variables that move each manager's store or cache into `store` (a folder per repository).
 * - pnpm reads its settings from `npm_config_*` (and `pnpm_config_*` from v11); the pnpm release
 *   a `packageManager` field asks for is downloaded into `PNPM_HOME`, kept with the store.
 * - yarn berry's cache stays in the project (`.yarn/cache`, setup's output): Plug'n'Play loads
 *   packages from the zips there, and tasks never see the store; its global folder (metadata)
 *   moves to the store.
 * - yarn classic's cache is `YARN_CACHE_FOLDER`; a berry without `.yarnrc.yml` takes the global
 *   folder, so both are set.
 * Only the detected managers' variables: npm warns about every `npm_config_*` it does not know.
 * `COREPACK_HOME` keeps the managers corepack downloads (a `packageManager` field).
 */
export function packageStoreEnv(managers: readonly PackageManager[], store: string): Record<string, string> {
  const env: Record<string, string> = { COREPACK_HOME: join(store, 'corepack') };
  for (const m of managers) {
    switch (m) {
      case 'npm':
        env.npm_config_cache = join(store, 'npm');
        break;
      case 'pnpm':
        env.npm_config_store_dir = join(store, 'pnpm');
        env.pnpm_config_store_dir = join(store, 'pnpm');
        env.PNPM_HOME = join(store, 'pnpm-home');
        break;
      case 'yarn-berry':
        env.YARN_GLOBAL_FOLDER = join(store, 'yarn-berry');
        env.YARN_ENABLE_GLOBAL_CACHE = 'false';
        break;
      case 'yarn-classic':
        env.YARN_CACHE_FOLDER = join(store, 'yarn');
        env.YARN_GLOBAL_FOLDER = join(store, 'yarn-berry');
        break;
      case 'bun':
        env.BUN_INSTALL_CACHE_DIR = join(store, 'bun');
        break;
    }
  }
  return env;
}

/** How each manager is named to a person (the no-setup hint, logs). */
export function managerName(m: PackageManager): string {
  return m === 'yarn-classic' || m === 'yarn-berry' ? 'yarn' : m;
}
