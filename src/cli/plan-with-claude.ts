import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAnthropicModel, modelConfigured, type PlannerError, planGoal } from '../agent/index.js';
import { UsageError } from '../common/errors.js';
import { sanitizeUntrusted } from '../common/untrusted.js';
import { configLimits } from '../config/repo-config.js';
import { resolveLimits } from '../goal/limits.js';
import { deriveGoalId } from '../goal/parse.js';
import type { GoalSpec } from '../goal/schema.js';
import { loadRepoConfigForCli } from '../run/load-repo-config.js';
import { localGitDir } from '../run/local-repo.js';
import { repoArgument } from '../run/paths.js';
import { Git } from '../workspace/git.js';
import { createLogger } from './logging.js';

/** Exit code for a planner failure: a spec it could not repair is bad input; spend or API trouble is not. */
export function plannerExitCode(err: PlannerError): number {
  return err.kind === 'invalid' ? 1 : err.kind === 'budget' ? 3 : 4;
}

/**
 * `goal-loop plan --issue` without a goal block: Claude writes the spec from the issue and the
 * repo, with the model and cost cap of the repo config (`configFile`, else the repo's own).
 */
export async function planIssueWithClaude(issueText: string, issuePath: string, repoArg: string | undefined, configFile?: string): Promise<{ spec: GoalSpec; costUsd: number }> {
  if (!modelConfigured(process.env)) {
    throw new UsageError(`plan: ${issuePath} has no \`\`\`goal block; set ANTHROPIC_API_KEY (or GOAL_LOOP_PROVIDER=bedrock|vertex) to let Claude write the plan, or add a goal block`);
  }
  if (!repoArg) throw new UsageError('plan: --repo is needed to plan from free text (the planner reads the repository)');
  const { repo, auth } = repoArgument(repoArg);
  const config = await loadRepoConfigForCli(repo, 'HEAD', configFile);
  const logger = createLogger();
  const git = new Git(auth);
  // The planner reads a working tree: a bare repository or a URL is cloned to a temporary folder.
  const bare = repo.startsWith('/') ? localGitDir(repo).bare : true;
  const tmp = bare ? await mkdtemp(join(tmpdir(), 'goal-loop-plan-')) : undefined;
  try {
    const repoDir = tmp ? join(tmp, 'repo') : repo;
    if (tmp) await git.run(tmp, ['clone', '--quiet', '--depth', '1', repo.startsWith('/') ? `file://${repo}` : repo, repoDir]);
    const result = await planGoal({
      model: createAnthropicModel({ ...(config.model ? { model: config.model } : {}), logger }),
      objective: sanitizeUntrusted(issueText),
      repoDir,
      goalId: deriveGoalId(issuePath),
      budgetUsd: resolveLimits(configLimits(config)).cost_cap_usd,
      logger,
    });
    return { spec: result.spec, costUsd: result.costUsd };
  } finally {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }
}
