import type { RepoConfig } from '../config/repo-config.js';
import { loadRepoConfigForCli } from '../run/load-repo-config.js';
import { localGitDir, refuseOwnWorkspaces } from '../run/local-repo.js';
import { Git } from '../workspace/git.js';
import { SessionError } from './goal-session.js';
import type { Confirmation } from './human.js';

/** Asks the human at the MCP client (`confirmWithHuman` bound to the server). */
export type AskHuman = (message: string, otherwise: string) => Promise<Confirmation>;

export interface ConfigSourceRequest {
  /** The repository the client asked for (normalized). */
  repo: string;
  /** The server's own repository: its `--repo`, else its working directory (normalized). */
  ownRepo: string;
  /** The branch the client asked the goal to build on. */
  base?: string | undefined;
  /** The server's `--config`. */
  configFile?: string | undefined;
  ask: AskHuman;
}

/**
 * A repository other than the server's own needs the human's yes, asked before anything touches
 * the path: the client may have planted it (a bare repository whose config names programs to
 * run, left in a workspace it edits). Paths inside goal-loop's own workspaces are refused outright.
 */
export async function confirmRepository(req: Pick<ConfigSourceRequest, 'repo' | 'ownRepo' | 'configFile' | 'ask'>, env?: NodeJS.ProcessEnv): Promise<void> {
  if (req.repo === req.ownRepo) return;
  try {
    refuseOwnWorkspaces(req.repo, env);
  } catch (err) {
    throw new SessionError(`nothing started: ${(err as Error).message}`);
  }
  const configFrom = req.configFile ? `the server's --config ${req.configFile}` : '.github/goal-loop.yml on its default branch';
  const what = `work on ${req.repo}, which is not the server's own repository (${req.ownRepo}); goal-loop would run git on it, and the goal's repo config would be ${configFrom}`;
  const answer = await req.ask(
    `The agent driving goal-loop asks to start a goal that would ${what}. Allow?`,
    'A human can start it with `goal-loop run --repo <repo>`, or configure the server with that --repo.',
  );
  if (!answer.ok) throw new SessionError(`nothing started: the agent asked to ${what}; ${answer.reason}`);
}

/**
 * The repo config that governs a goal the MCP client starts. The client is the agent the
 * config governs, so it never chooses it: the config is the server's `--config`, else
 * `.github/goal-loop.yml` on the default branch (what HEAD names) of the repository. `base` only
 * chooses the code the goal builds on; a base other than the default branch needs the human's
 * yes by elicitation and is refused without it. The repository itself was confirmed before
 * (confirmRepository).
 */
export async function configForMcpGoal(req: ConfigSourceRequest): Promise<RepoConfig> {
  const local = req.repo.startsWith('/');
  const git = new Git();
  const gitDir = local ? localGitDir(req.repo).gitDir : undefined;
  const head = gitDir ? await git.tryRunGitDir(gitDir, ['symbolic-ref', '--quiet', 'HEAD']) : undefined;
  const defaultBranch = head?.startsWith('refs/heads/') ? head.slice('refs/heads/'.length) : undefined;
  if (defaultBranch?.startsWith('goal/') && !req.configFile) {
    throw new SessionError(
      `${req.repo} has ${defaultBranch} checked out, a branch that tasks write, so its repo config cannot govern the goal: check out the default branch there, or give the server --config <file>`,
    );
  }
  // A detached HEAD names no branch: it may be any commit, one a task wrote included.
  if (gitDir && head === undefined && !req.configFile && (await git.tryRunGitDir(gitDir, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'])) !== undefined) {
    throw new SessionError(
      `${req.repo} is at a detached HEAD, which names no branch whose repo config could govern the goal: check out the default branch there, or give the server --config <file> (goal-loop run takes --base <branch>)`,
    );
  }
  const configFrom = req.configFile
    ? `the server's --config ${req.configFile}`
    : defaultBranch
      ? `.github/goal-loop.yml on ${defaultBranch}`
      : local
        ? '.github/goal-loop.yml at HEAD'
        : 'the defaults';

  if (req.base !== undefined && req.base !== defaultBranch) {
    const which = defaultBranch ? `not the default branch (${defaultBranch})` : 'not known to be the default branch';
    const what = `build on base "${req.base}", which is ${which}; the repo config still comes from ${configFrom}, never from "${req.base}"`;
    const answer = await req.ask(
      `The agent driving goal-loop asks to start a goal that would ${what}. Allow?`,
      'A human can start it with `goal-loop run --repo <repo> --base <branch>`, or configure the server with that --repo.',
    );
    if (!answer.ok) throw new SessionError(`nothing started: the agent asked to ${what}; ${answer.reason}`);
  }
  return loadRepoConfigForCli(req.repo, 'HEAD', req.configFile);
}
