import { readFile } from 'node:fs/promises';
import { parseRepoConfig, parseRepoConfigText, REPO_CONFIG_PATH, RepoConfigError, type RepoConfig } from '../config/repo-config.js';
import { Git } from '../workspace/git.js';
import { InputError } from '../common/errors.js';

/**
 * The repo config for a CLI run: `--config <file>` if given; else `.github/goal-loop.yml` as
 * committed on the base branch (`baseRef`) of a local repository; else the defaults. Never from
 * the goal branch: the config is the owner's word, and a task writes that branch.
 */
export async function loadRepoConfigForCli(repo: string, baseRef: string, file?: string): Promise<RepoConfig> {
  if (file) {
    const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new RepoConfigError([`--config ${file}: ${err.code === 'ENOENT' ? 'file not found' : `cannot read (${err.code})`}`]);
    });
    return parseRepoConfigText(text, file);
  }
  if (!repo.startsWith('/')) return parseRepoConfig(undefined);
  const git = new Git();
  if (baseRef === 'HEAD') {
    // A checkout where the user is looking at a goal branch: its HEAD is what tasks wrote.
    const head = await git.tryRun(repo, ['symbolic-ref', '--quiet', 'HEAD']);
    if (head?.startsWith('refs/heads/goal/')) {
      throw new InputError(`${repo} has ${head.slice('refs/heads/'.length)} checked out, a branch that tasks write: pass --base <branch> to name the branch the goal starts from (and whose .github/goal-loop.yml applies)`);
    }
  }
  if ((await git.tryRun(repo, ['rev-parse', '--verify', '--quiet', `${baseRef}^{commit}`])) === undefined) return parseRepoConfig(undefined);
  const text = await git.tryRun(repo, ['show', `${baseRef}:${REPO_CONFIG_PATH}`]);
  return text === undefined ? parseRepoConfig(undefined) : parseRepoConfigText(text);
}
