import { lstat, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointRefusedError, type ScriptChange, VerificationScriptChangedError } from '../ports/workspace.js';
import { type Git, literalPathspec } from './git.js';
import type { StagedEntry } from './staged-diff.js';

/**
 * The package.json scripts a task's verification runs are protected from the task (DESIGN.md §10):
 * `"test": "jest || true"` would grade it as well as a deleted test. package.json itself stays
 * free (tasks add dependencies): only `scripts[N]`, `scripts.preN` and `scripts.postN` of the
 * protected names are compared, the root's at the goal's base against the staged one.
 *
 * Both sides are untrusted data: read with JSON.parse only, compared as values, never run.
 * - No package.json at the base (or one JSON.parse cannot read): nothing to protect. The base's
 *   verification could not run those scripts, so writing them is the task's work.
 * - Staged: deleted counts as every script removed. Larger than 1 MiB, not a JSON object, or a
 *   symlink: refused as "cannot tell". A verification that runs package scripts cannot have
 *   passed on a package.json npm cannot read, unless another reader (bun's, which takes comments
 *   and trailing commas) saw different scripts than JSON.parse would: that is what is refused.
 *   A base that is a symlink or larger than 1 MiB: any change to package.json is refused.
 */

/** Past this, package.json is not read (a real one is a few KB). */
export const MAX_PACKAGE_JSON_BYTES = 1024 * 1024;
const PACKAGE_JSON = 'package.json';

/**
 * After staging: unstages everything and throws when the change alters a protected script or a
 * package manager's config. `setupPaths`: what setup left (a `.npmrc` it wrote is its own).
 */
export async function refuseChangedPackageScripts(git: Git, dir: string, base: string, staged: readonly StagedEntry[], names: readonly string[], setupPaths: readonly string[] = []): Promise<void> {
  if (names.length === 0) return;
  const configs = (await changedPackageManagerConfigs(git, dir, base)).filter((p) => !setupPaths.includes(p));
  if (configs.length > 0) {
    await git.run(dir, ['reset', '--quiet']);
    throw new PackageManagerConfigChangedError(configs);
  }
  const entry = staged.find((e) => e.path === PACKAGE_JSON);
  if (!entry) return;
  const refusal = await scriptRefusal(git, dir, base, entry, names);
  if (!refusal) return;
  await git.run(dir, ['reset', '--quiet']);
  throw refusal;
}

/** The refusal the staged package.json earns against `base`'s, if any. */
export async function scriptRefusal(git: Git, dir: string, base: string, entry: StagedEntry, names: readonly string[]): Promise<VerificationScriptChangedError | undefined> {
  const before = await readAt(git, dir, `${base}:${PACKAGE_JSON}`, await baseMode(git, dir, base));
  if (before.kind === 'too-large') return new VerificationScriptChangedError([], 'at the goal base is larger than 1 MiB');
  // npm reads through a symlink: the scripts are another file's, which no comparison here covers.
  if (before.kind === 'symlink') return new VerificationScriptChangedError([], 'at the goal base is a symlink');
  if (before.kind !== 'scripts') return undefined;
  let after: Scripts;
  if (entry.status === 'D') {
    after = {};
  } else {
    const read = await readAt(git, dir, `:${PACKAGE_JSON}`, entry.newMode);
    if (read.kind !== 'scripts') return new VerificationScriptChangedError([], read.kind === 'too-large' ? 'is larger than 1 MiB' : read.kind === 'symlink' ? 'is a symlink' : 'is not a JSON object');
    after = read.scripts;
  }
  const changes = changedScripts(before.scripts, after, names);
  return changes.length > 0 ? new VerificationScriptChangedError(changes) : undefined;
}

type Scripts = Readonly<Record<string, unknown>>;

/** For each protected name N: N, preN and postN, where base and staged differ. */
export function changedScripts(before: Scripts, after: Scripts, names: readonly string[]): ScriptChange[] {
  const out: ScriptChange[] = [];
  const seen = new Set<string>();
  for (const name of names) {
    for (const key of [name, `pre${name}`, `post${name}`]) {
      if (seen.has(key)) continue;
      seen.add(key);
      const [was, is] = [own(before, key), own(after, key)];
      if (was === is) continue;
      out.push({ name: key, change: was === undefined ? 'added' : is === undefined ? 'removed' : 'changed' });
    }
  }
  return out;
}

/** A script's value as comparable text; undefined when absent (own keys only: `constructor` is no script). */
function own(scripts: Scripts, key: string): string | undefined {
  return Object.hasOwn(scripts, key) ? JSON.stringify(scripts[key]) : undefined;
}

type Read = { kind: 'scripts'; scripts: Scripts } | { kind: 'absent' | 'too-large' | 'symlink' | 'unparsable' };

/** The `scripts` of the package.json blob `spec` (`<commit>:package.json` or `:package.json`). */
async function readAt(git: Git, dir: string, spec: string, mode: string | undefined): Promise<Read> {
  if (mode === undefined) return { kind: 'absent' };
  if (mode === '120000') return { kind: 'symlink' };
  if (mode !== '100644' && mode !== '100755') return { kind: 'absent' };
  const size = Number(await git.run(dir, ['cat-file', '-s', spec]));
  if (!Number.isSafeInteger(size) || size > MAX_PACKAGE_JSON_BYTES) return { kind: 'too-large' };
  const text = (await git.run(dir, ['cat-file', 'blob', spec])).replace(/^\uFEFF/, '');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { kind: 'unparsable' };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return { kind: 'unparsable' };
  const scripts = (json as Record<string, unknown>).scripts;
  // Scripts that are not an object are none, to npm as here.
  return { kind: 'scripts', scripts: typeof scripts === 'object' && scripts !== null && !Array.isArray(scripts) ? (scripts as Scripts) : {} };
}

/** The mode of package.json in `base`'s tree (a folder or gitlink of that name: not a file). */
async function baseMode(git: Git, dir: string, base: string): Promise<string | undefined> {
  const line = await git.run(dir, ['ls-tree', '--full-tree', base, '--', literalPathspec(PACKAGE_JSON)]);
  const m = /^(\d+) (\w+) /.exec(line);
  return m && m[2] === 'blob' ? m[1] : undefined;
}

/**
 * The package managers' project config, read by the same `npm test` whose scripts are protected:
 * `.npmrc`'s `script-shell=/bin/true` (npm, pnpm, yarn 1) or `.yarnrc.yml`'s `yarnPath` run the
 * unchanged scripts another way, or not at all.
 */
export const PACKAGE_MANAGER_CONFIGS = ['.npmrc', '.yarnrc', '.yarnrc.yml', 'bunfig.toml'] as const;

/** The checkpoint would leave a package manager's config other than at the goal's base. */
export class PackageManagerConfigChangedError extends CheckpointRefusedError {
  override name = 'PackageManagerConfigChangedError';
  constructor(readonly paths: readonly string[]) {
    super(
      `checkpoint refused: the change alters package manager config that decides how the verification's package scripts run: ${paths.join(', ')}. ` +
        'A task may not change how its verification runs; put these files back as they were at the goal base (or remove them if they were not there).',
    );
  }
}

/**
 * The configs in the working tree (tracked, untracked or gitignored: the verification read them
 * all) that differ from `base`'s: added, deleted, rewritten, or turned into another kind of file.
 */
export async function changedPackageManagerConfigs(git: Git, dir: string, base: string): Promise<string[]> {
  const out = await git.run(dir, ['ls-tree', '-z', '--full-tree', base, '--', ...PACKAGE_MANAGER_CONFIGS.map(literalPathspec)]);
  const atBase = new Map<string, { mode: string; oid: string }>();
  for (const line of out.split('\0')) {
    const m = /^(\d+) blob (\w+)\t(.*)$/s.exec(line);
    if (m) atBase.set(m[3]!, { mode: m[1]!, oid: m[2]! });
  }
  const changed: string[] = [];
  for (const name of PACKAGE_MANAGER_CONFIGS) {
    const was = atBase.get(name);
    const st = await lstat(join(dir, name)).catch(() => undefined);
    if (!st || !was) {
      if (st || was) changed.push(name);
      continue;
    }
    if (st.isSymbolicLink()) {
      const same = was.mode === '120000' && (await readlink(join(dir, name))) === (await git.run(dir, ['cat-file', 'blob', was.oid]));
      if (!same) changed.push(name);
    } else if (!st.isFile() || was.mode === '120000' || st.size > MAX_PACKAGE_JSON_BYTES) {
      changed.push(name);
    } else if ((await git.run(dir, ['hash-object', '--no-filters', '--', name])) !== was.oid) {
      changed.push(name);
    }
  }
  return changed;
}
