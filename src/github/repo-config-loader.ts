import { parseRepoConfig, REPO_CONFIG_PATH, type RepoConfig, RepoConfigError } from '../config/repo-config.js';
import type { Octokit } from './github-forge.js';

/** `.github/goal-loop.yml` (or `path`) on the default branch, through Probot's config plugin (what `context.config` uses), validated. */
export async function loadRepoConfig(o: Octokit, owner: string, repo: string, path: string = REPO_CONFIG_PATH): Promise<RepoConfig> {
  let raw: unknown;
  try {
    const { config } = await o.config.get({ owner, repo, path });
    raw = config;
  } catch (err) {
    const e = err as { name?: string; message?: string; status?: number };
    if (e.name === 'YAMLException' || /yaml/i.test(e.name ?? '') || /yaml/i.test(e.message ?? '')) throw new RepoConfigError([`not valid YAML: ${e.message}`]);
    throw err;
  }
  // The plugin answers {} when the file does not exist.
  return parseRepoConfig(raw && Object.keys(raw as object).length > 0 ? raw : undefined);
}
