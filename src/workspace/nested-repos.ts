import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointRefusedError } from '../ports/workspace.js';

/**
 * A `.git` below the workspace root (a directory, a gitfile or a symlink). Git treats the folder
 * holding it as a repository of its own and, for status, add or diff, starts a git process
 * there that reads *that* repository's config: its filters, fsmonitor and the like would run on
 * the host, as the bot. None may exist when the bot's git runs.
 */
export class NestedRepositoryError extends CheckpointRefusedError {
  override name = 'NestedRepositoryError';
  constructor(readonly paths: string[]) {
    super(
      `nested git repositories are not allowed in the workspace (${paths.slice(0, 5).join(', ')}${paths.length > 5 ? ', …' : ''}): ` +
        'goal-loop never runs git inside a repository that a task or a repository created. ' +
        'Leave no `.git` below the repository root (vendor the files instead, or add the dependency as a package).',
    );
  }
}

const PARALLEL = 16;

/**
 * Every `.git` entry below `root` (not the root's own), as paths relative to it. Symlinks are
 * never followed, so the walk stays inside the tree. Ignored folders are searched too: a rule in
 * `.gitignore` is the repository's word, not ours.
 */
export async function findNestedGitEntries(root: string): Promise<string[]> {
  const found: string[] = [];
  let frontier: string[] = [''];
  while (frontier.length > 0) {
    const next: string[] = [];
    for (let i = 0; i < frontier.length; i += PARALLEL) {
      await Promise.all(
        frontier.slice(i, i + PARALLEL).map(async (rel) => {
          const entries = await readdir(rel ? join(root, rel) : root, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
            // Gone since it was listed, or not a directory any more: nothing of it to search.
            if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
            throw err;
          });
          for (const e of entries) {
            const path = rel ? `${rel}/${e.name}` : e.name;
            if (e.name === '.git') {
              if (rel) found.push(path);
            } else if (e.isDirectory()) next.push(path);
          }
        }),
      );
    }
    frontier = next;
  }
  return found.sort();
}

/** Throws when the tree holds a nested repository (before a git that would read it runs). */
export async function refuseNestedRepositories(root: string): Promise<void> {
  const found = await findNestedGitEntries(root);
  if (found.length > 0) throw new NestedRepositoryError(found);
}

/** Deletes every nested `.git` (before a rollback's git runs); returns what it removed. */
export async function removeNestedRepositories(root: string): Promise<string[]> {
  const found = await findNestedGitEntries(root);
  for (const rel of found) await rm(join(root, rel), { recursive: true, force: true });
  return found;
}
