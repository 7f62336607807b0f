import type { RepoConfig } from '../config/repo-config.js';
import { loadRepoConfigForCli } from '../run/load-repo-config.js';
import { Git } from '../workspace/git.js';
import type { Confirmation } from './human.js';
import { SessionError } from './goal-session.js';

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
 * The repo config that governs a goal the MCP client starts. The client is the agent the
 * config governs, so it never chooses it: the config is the server's `--config`, else
 * `.github/goal-loop.yml` on the default branch (what HEAD names) of the repository. `base` only
 * chooses the code the goal builds on; a base other than the default branch, or a repository
 * other than the server's own (whose default-branch config would then apply), needs the human's
 * yes by elicitation and is refused without it.
 */
export async function configForMcpGoal(req: ConfigSourceRequest): Promise<RepoConfig> {
  const local = req.repo.startsWith('/');
  const head = local ? await new Git().tryRun(req.repo, ['symbolic-ref', '--quiet', 'HEAD']) : undefined;
  const defaultBranch = head?.startsWith('refs/heads/') ? head.slice('refs/heads/'.length) : undefined;
  if (defaultBranch?.startsWith('goal/') && !req.configFile) {
    throw new SessionError(`${req.repo} has ${defaultBranch} checked out, a branch that tasks write, so its repo config cannot govern the goal: check out the default branch there, or give the server --config <file>`);
  }
  const configFrom = req.configFile ? `the server's --config ${req.configFile}` : defaultBranch ? `.github/goal-loop.yml on ${defaultBranch}` : local ? '.github/goal-loop.yml at HEAD' : 'the defaults';

  const asks: string[] = [];
  if (req.repo !== req.ownRepo) {
    asks.push(`work on ${req.repo}, which is not the server's own repository (${req.ownRepo}); the goal's repo config would be ${configFrom}`);
  }
  if (req.base !== undefined && req.base !== defaultBranch) {
    const which = defaultBranch ? `not the default branch (${defaultBranch})` : 'not known to be the default branch';
    asks.push(`build on base "${req.base}", which is ${which}; the repo config still comes from ${configFrom}, never from "${req.base}"`);
  }
  if (asks.length) {
    const answer = await req.ask(
      `The agent driving goal-loop asks to start a goal that would ${asks.join('; and ')}. Allow?`,
      'A human can start it with `goal-loop run --repo <repo> --base <branch>`, or configure the server with that --repo.',
    );
    if (!answer.ok) throw new SessionError(`nothing started: the agent asked to ${asks.join('; and to ')}; ${answer.reason}`);
  }
  return loadRepoConfigForCli(req.repo, 'HEAD', req.configFile);
}
