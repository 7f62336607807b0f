import { readFile } from 'node:fs/promises';
import { InputError } from '../common/errors.js';
import { parseRepoConfig, parseRepoConfigText, REPO_CONFIG_PATH, type RepoConfig, RepoConfigError } from '../config/repo-config.js';
import { Git } from '../workspace/git.js';
import { localGitDir, refuseOwnWorkspaces } from './local-repo.js';

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
  refuseOwnWorkspaces(repo);
  const git = new Git();
  const { gitDir } = localGitDir(repo);
  if (baseRef === 'HEAD') {
    const head = await git.tryRunGitDir(gitDir, ['symbolic-ref', '--quiet', 'HEAD']);
    // A checkout where the user is looking at a goal branch: its HEAD is what tasks wrote.
    if (head?.startsWith('refs/heads/goal/')) {
      throw new InputError(
        `${repo} has ${head.slice('refs/heads/'.length)} checked out, a branch that tasks write: pass --base <branch> to name the branch the goal starts from (and whose .github/goal-loop.yml applies)`,
      );
    }
    // A detached HEAD names no branch: it may be any commit, a goal branch's included.
    if (head === undefined && (await git.tryRunGitDir(gitDir, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'])) !== undefined) {
      throw new InputError(`${repo} is at a detached HEAD, which names no branch whose .github/goal-loop.yml could apply: pass --base <branch> (the branch the goal starts from), or --config <file>`);
    }
  }
  if ((await git.tryRunGitDir(gitDir, ['rev-parse', '--verify', '--quiet', `${baseRef}^{commit}`])) === undefined) return parseRepoConfig(undefined);
  const text = await git.tryRunGitDir(gitDir, ['cat-file', 'blob', `${baseRef}:${REPO_CONFIG_PATH}`]);
  return text === undefined ? parseRepoConfig(undefined) : parseRepoConfigText(text);
}
