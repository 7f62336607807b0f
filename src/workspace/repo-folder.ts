import { createHash } from 'node:crypto';
import { basename } from 'node:path';

/**
 * The folder name of a repository's own share of a cache (setup cache entries, its package
 * store): a readable name and a hash of the remote, so no two repositories ever share one.
 */
export function repoFolderName(repo: string): string {
  const name = basename(repo.replace(/\.git\/?$/, '').replace(/\/+$/, '')).replace(/[^A-Za-z0-9._-]/g, '_') || 'repo';
  return `${name}-${createHash('sha256').update(repo).digest('hex').slice(0, 12)}`;
}
