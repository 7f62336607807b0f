import picomatch from 'picomatch';
import { TestFilesChangedError } from '../ports/workspace.js';
import { type Git, literalPathspec } from './git.js';
import type { StagedEntry } from './staged-diff.js';

/**
 * Test files are protected from the task they verify (DESIGN.md §10): a task may add files that
 * match the test globs, but not change or delete those that were at the goal's base. Paths are
 * the task's text (a leading '-', glob characters, newlines): they reach git only as literal
 * pathspecs after `--` or on stdin, never as options or patterns.
 */

/** A change a checkpoint may not make: to a test file that existed at the goal's base. */
export interface TestFileChange {
  path: string;
  change: 'modified' | 'deleted';
}

/** After staging: unstages everything and throws when the change touches a test file of `base`. */
export async function refuseChangedTestFiles(git: Git, dir: string, base: string, staged: readonly StagedEntry[], globs: readonly string[]): Promise<void> {
  const changed = await changedBaseTestFiles(git, dir, base, staged, globs);
  if (changed.length === 0) return;
  await git.run(dir, ['reset', '--quiet']);
  throw new TestFilesChangedError(changed);
}

/** The staged entries that change or delete a test file present in `base`'s tree. */
export async function changedBaseTestFiles(git: Git, dir: string, base: string, staged: readonly StagedEntry[], globs: readonly string[]): Promise<TestFileChange[]> {
  const isTest = matcher(globs);
  const candidates = staged.filter((e) => isTest(e.path));
  if (candidates.length === 0) return [];
  const atBase = await existingAt(
    git,
    dir,
    base,
    candidates.map((e) => e.path),
  );
  return candidates.filter((e) => atBase.has(e.path)).map((e) => ({ path: e.path, change: e.status === 'D' ? 'deleted' : 'modified' }));
}

/**
 * `verify_with_base_tests`: puts HEAD's version back over every test file that was at `base`,
 * is at HEAD and was changed or deleted in the tree since (tracked changes only: a new file
 * stays). `excludes`: pathspecs of files left alone (setup's output). Returns the restored paths.
 */
export async function restoreBaseTestFiles(git: Git, dir: string, base: string, globs: readonly string[], excludes: readonly string[] = []): Promise<string[]> {
  const isTest = matcher(globs);
  const out = await git.run(dir, ['diff', '--name-status', '-z', '--no-renames', '--ignore-submodules=all', 'HEAD', '--', '.', ...excludes]);
  const parts = out.split('\0');
  const changed: string[] = [];
  // `<status>\0<path>\0` pairs; an added path (A) is not at HEAD, so there is nothing to put back.
  for (let i = 0; i + 1 < parts.length; i += 2) {
    if (parts[i] !== 'A' && isTest(parts[i + 1]!)) changed.push(parts[i + 1]!);
  }
  if (changed.length === 0) return [];
  const atBase = await existingAt(git, dir, base, changed);
  const restore = changed.filter((p) => atBase.has(p));
  if (restore.length === 0) return [];
  // Git writes no file through a symlinked leading folder: it replaces the link with a folder.
  await git.run(dir, ['checkout', '--quiet', 'HEAD', '--pathspec-from-file=-', '--pathspec-file-nul'], restore.map((p) => `${literalPathspec(p)}\0`).join(''));
  return restore;
}

/** Room for the pathspecs of one `ls-tree` (far below the kernel's argument limit). */
const ARGS_BUDGET = 64 * 1024;

/**
 * Which of `paths` are entries (files, links, gitlinks) of `commit`'s tree: one git process for
 * all of them (one per 64 KB of names). A folder's pathspec lists its files, so only exact names count.
 */
export async function existingAt(git: Git, dir: string, commit: string, paths: readonly string[]): Promise<Set<string>> {
  const wanted = new Set(paths);
  const found = new Set<string>();
  for (const chunk of chunks([...wanted], ARGS_BUDGET)) {
    const out = await git.run(dir, ['ls-tree', '-r', '-z', '--name-only', '--full-tree', commit, '--', ...chunk.map(literalPathspec)]);
    for (const name of out.split('\0')) if (wanted.has(name)) found.add(name);
  }
  return found;
}

function matcher(globs: readonly string[]): (path: string) => boolean {
  if (globs.length === 0) return () => false;
  return picomatch([...globs], { dot: true });
}

function chunks(paths: string[], budget: number): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const p of paths) {
    if (current.length > 0 && size + p.length > budget) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(p);
    size += p.length + 12;
  }
  if (current.length > 0) out.push(current);
  return out;
}
