import { join } from 'node:path';
import { parseRepoConfig, type RepoConfig } from '../config/repo-config.js';
import type { Workspace } from '../ports/workspace.js';
import { goalWorkspace as cloneWorkspace } from '../run/compose-goal-run.js';
import type { GitHubGoal } from '../steering/goal-meta.js';
import { type GitWorkspace, releaseWorkspace } from '../workspace/git-workspace.js';
import type { MirrorCache } from '../workspace/mirror-cache.js';
import type { PackageStores } from '../workspace/package-stores.js';
import type { SetupCache } from '../workspace/setup-cache.js';
import { tokenHeaderConfig } from './git-auth.js';
import type { Octokit } from './github-forge.js';

export interface GoalWorkspaceDeps {
  workspaceRoot: string;
  /** Clone goal workspaces from a local mirror per repository (see MirrorCache.fromEnv). */
  mirrorCache?: MirrorCache;
  /** Put back what the same setup produced before on the repository (see SetupCache.fromEnv). */
  setupCache?: SetupCache;
  /** Package managers' stores per repository, bound into setup (see PackageStores.fromEnv). */
  packageStores?: PackageStores;
  identity?: { name: string; email: string };
}

/** The goal's clone of its repository, authenticated with the installation token per git command. */
export function githubGoalWorkspace(deps: GoalWorkspaceDeps, octokit: Octokit, g: GitHubGoal, goalId: string, config: RepoConfig): GitWorkspace {
  const tokenConfig = async () => tokenHeaderConfig(g.cloneUrl, await installationToken(octokit));
  return cloneWorkspace(
    {
      remote: g.cloneUrl,
      remoteConfig: tokenConfig,
      dir: goalWorkspaceDir(deps.workspaceRoot, g),
      branch: g.branch,
      baseBranch: g.defaultBranch,
      identity: deps.identity ?? { name: 'goal-loop[bot]', email: 'goal-loop[bot]@users.noreply.github.com' },
      ...(deps.mirrorCache ? { mirrorCache: deps.mirrorCache } : {}),
      ...(deps.setupCache ? { setupCache: deps.setupCache } : {}),
      ...(deps.packageStores ? { packageStores: deps.packageStores } : {}),
    },
    goalId,
    config,
  );
}

/**
 * Pushes a checkpoint that a run of the goal committed in its clone here (the run died before its
 * push, the goal rests meanwhile): for effects performed outside a run. No clone here: rejected for good.
 */
export function goalCheckpointPusher(deps: GoalWorkspaceDeps, octokit: Octokit, g: GitHubGoal, goalId: string): Workspace {
  return githubGoalWorkspace(deps, octokit, g, goalId, parseRepoConfig({}));
}

/**
 * The installation's token, as the Octokit's own requests get it. Not `octokit.auth()`: an
 * installation Octokit from `probot.auth()` asks for a new token there with a request that knows
 * no `baseUrl`, so on GitHub Enterprise (GHE_HOST) its first call goes to api.github.com. The
 * request hook asks at the Octokit's own base URL (or answers from its cache); the request it
 * authorizes here is answered locally and never sent.
 */
export async function installationToken(octokit: Octokit): Promise<string> {
  let authorization = '';
  await octokit.request('GET /rate_limit', {
    request: {
      fetch: async (_url: string, init: { headers: Record<string, string> }) => {
        authorization = init.headers.authorization ?? '';
        return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
      },
    },
  });
  const token = /^(?:token|bearer) (\S+)$/i.exec(authorization)?.[1];
  if (!token) throw new Error('the installation token could not be obtained');
  return token;
}

/** Where a goal's clone lives (the path its commands see: the sandbox binds it at the same path). */
export function goalWorkspaceDir(root: string, g: GitHubGoal): string {
  return join(root, `${g.owner}-${g.repo}`.replace(/[^A-Za-z0-9._-]/g, '_'), String(g.issueNumber));
}

/**
 * Deletes a goal's workspace once the goal is at rest (COMPLETE, ESCALATED, STOPPED), and lets
 * its mirror be evicted. For the worker to call, outside a run of that goal.
 */
export async function releaseGoalWorkspace(deps: Pick<GoalWorkspaceDeps, 'workspaceRoot' | 'mirrorCache'>, g: GitHubGoal): Promise<void> {
  await releaseWorkspace({ dir: goalWorkspaceDir(deps.workspaceRoot, g), remote: g.cloneUrl, ...(deps.mirrorCache ? { mirrorCache: deps.mirrorCache } : {}) });
}
