import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import { InputError } from '../common/errors.js';
import { workspaceRoot } from './paths.js';

/**
 * The git directory of a local repository path, to name explicitly (GIT_DIR): `<path>/.git` (a
 * directory or a gitfile) of a checkout, else the path itself, a bare repository. Git never
 * discovers a bare repository on its own (`safe.bareRepository=explicit`).
 */
export function localGitDir(repo: string): { gitDir: string; bare: boolean } {
  const dotGit = join(repo, '.git');
  return existsSync(dotGit) ? { gitDir: dotGit, bare: false } : { gitDir: repo, bare: true };
}

/** The real path of `path`, or of its deepest existing ancestor with the rest appended. */
function realish(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realish(parent), basename(path));
  }
}

/**
 * Refuses a repository path inside goal-loop's own workspaces: what is there was written by
 * tasks and clients (a planted bare repository, a clone's config), never the owner's repository.
 */
export function refuseOwnWorkspaces(repo: string, env: NodeJS.ProcessEnv = process.env): void {
  if (!repo.startsWith('/')) return;
  const root = realish(workspaceRoot(env));
  const rel = relative(root, realish(repo));
  if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) {
    throw new InputError(`--repo ${repo}: the path is inside goal-loop's own workspaces (${workspaceRoot(env)}), where tasks and clients write; give the repository itself`);
  }
}
