import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * goal-loop's own folder: the nearest package.json named goal-loop above this file, so it is
 * right both built (dist/src/cli/) and from source (src/cli/).
 */
export function packageDir(): { dir: string; version: string } {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i += 1) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'goal-loop' && typeof pkg.version === 'string') return { dir, version: pkg.version };
    } catch {
      // no package.json here (or not readable): look further up
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error('cannot find the package.json of goal-loop');
}

/** goal-loop's version, from its package.json, never hard-coded. */
export function packageVersion(): string {
  return packageDir().version;
}
