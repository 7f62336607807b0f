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
  const tokenConfig = async () => {
    const auth = (await octokit.auth({ type: 'installation' })) as { token: string };
    return tokenHeaderConfig(g.cloneUrl, auth.token);
  };
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
