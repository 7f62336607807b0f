import { readFile } from 'node:fs/promises';
import { parseRepoConfig, parseRepoConfigText, REPO_CONFIG_PATH, RepoConfigError, type RepoConfig } from '../config/repo-config.js';
import { Git } from '../workspace/git.js';

/**
 * The repo config for a CLI run: `--config <file>` if given; else `.github/goal-loop.yml` as
 * committed on the goal branch (or the base branch) of a local repository; else the defaults.
 */
export async function loadRepoConfigForCli(repo: string, refs: string[], file?: string): Promise<RepoConfig> {
  if (file) {
    const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new RepoConfigError([`--config ${file}: ${err.code === 'ENOENT' ? 'file not found' : `cannot read (${err.code})`}`]);
    });
    return parseRepoConfigText(text);
  }
  if (!repo.startsWith('/')) return parseRepoConfig(undefined);
  const git = new Git();
  for (const ref of refs) {
    if ((await git.tryRun(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])) === undefined) continue;
    const text = await git.tryRun(repo, ['show', `${ref}:${REPO_CONFIG_PATH}`]);
    return text === undefined ? parseRepoConfig(undefined) : parseRepoConfigText(text);
  }
  return parseRepoConfig(undefined);
}
