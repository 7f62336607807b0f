import type { Octokit } from './github-forge.js';

const WRITERS = new Set(['admin', 'maintain', 'write']);

/**
 * Write, maintain or admin permission on the repository, asked of GitHub's collaborator
 * permission API (never inferred from the login name).
 */
export async function canSteer(o: Octokit, owner: string, repo: string, login: string): Promise<boolean> {
  try {
    const { data } = await o.rest.repos.getCollaboratorPermissionLevel({ owner, repo, username: login });
    return WRITERS.has(data.permission) || WRITERS.has((data as { role_name?: string }).role_name ?? '');
  } catch (err) {
    if ((err as { status?: number }).status === 404) return false; // not a collaborator
    throw err;
  }
}
