import { isAbsolute, relative, resolve, sep } from 'node:path';
import { type AgentChoice, checkAgentChoice, selectAgent } from '../../agent/select-agent.js';
import { UsageError } from '../../common/errors.js';
import { pick } from '../../common/pick.js';
import { redactUrls } from '../../common/redact-urls.js';
import { shellWord } from '../../common/shell-word.js';
import { ConsoleForge } from '../../forge/console-forge.js';
import type { LimitsOverride } from '../../goal/limits.js';
import { readCoreMeta } from '../../goal/meta.js';
import { loadGoalSpecFile } from '../../goal/parse.js';
import type { LoopResult } from '../../goal/result.js';
import { exitCodeFor } from '../../goal/result.js';
import { openStore } from '../../ledger/open-ledger.js';
import type { Ledger } from '../../ports/ledger.js';
import { agentDeps } from '../../run/compose-goal-run.js';
import { loadRepoConfigForCli } from '../../run/load-repo-config.js';
import { localGitDir } from '../../run/local-repo.js';
import { acquireLock } from '../../run/lock.js';
import { repoArgument, workspaceDir, workspaceRoot } from '../../run/paths.js';
import { checkRepoReachable } from '../../run/repo-check.js';
import { runConfiguredGoal } from '../../run/run-configured-goal.js';
import { Git } from '../../workspace/git.js';
import { releaseWorkspace } from '../../workspace/git-workspace.js';
import { MirrorCache } from '../../workspace/mirror-cache.js';
import { PackageStores } from '../../workspace/package-stores.js';
import { SetupCache } from '../../workspace/setup-cache.js';
import { unknownApprovalsWarning } from '../approvals.js';
import { cliInvocation } from '../invocation.js';
import { createLogger } from '../logging.js';

export interface RunValues {
  repo: string;
  goal: string;
  agent: AgentChoice;
  json?: boolean;
  base?: string;
  approve?: string[];
  config?: string;
  budget?: number;
  followBase?: boolean;
}

export async function runGoalCommand(values: RunValues): Promise<number> {
  const budget = values.budget;

  const spec = await loadGoalSpecFile(values.goal);
  checkAgentChoice(values.agent as AgentChoice);
  // Credentials in the URL stay in memory, for the remote's git processes only.
  const { repo, auth } = repoArgument(values.repo);
  await checkRepoReachable(repo, values.base, auth);
  const approvalWarning = unknownApprovalsWarning(spec, values.approve);
  if (approvalWarning) process.stderr.write(`${approvalWarning}\n`);
  const branch = `goal/${spec.goal_id}`;
  const config = await loadRepoConfigForCli(repo, values.base ? `refs/heads/${values.base}` : 'HEAD', values.config);
  if (values.followBase && config.follow_base === 'off') {
    throw new UsageError('--follow-base: the repo config says follow_base: off. Set it to rebase or merge, or run without --follow-base.');
  }

  const dir = workspaceDir(workspaceRoot(), repo, spec.goal_id);
  const release = await acquireLock(`${dir}.lock`, (why) => process.stderr.write(`${why}\n`));
  // A goal's loop runs for minutes or hours: no checkpoint's disk sync on its event loop.
  const store = await openStore(process.env, { checkpoints: 'background' }).catch((err: unknown) => {
    release();
    throw err;
  });
  const { ledger } = store;
  const logger = createLogger();
  // URLs clone from a mirror; a local path is already cloned by copying its object files. Both
  // park a finished goal's tree in the same pools, under GOAL_LOOP_CACHE_MB.
  const cache = MirrorCache.fromEnv(workspaceRoot(), process.env, logger);
  const clone = isAbsolute(repo) ? { parkCache: cache } : { mirrorCache: cache };
  const stop = new AbortController();
  let signals = 0;
  const onSignal = () => {
    signals += 1;
    if (signals > 1) process.exit(130);
    process.stderr.write('\nstopping: the current command is killed and its changes rolled back (Ctrl-C again to quit at once)\n');
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const key = { repo, goalId: spec.goal_id };
    if (budget !== undefined) {
      // The operator's word, kept with the goal as the App keeps `/goal budget`.
      await ledger.upsertGoal(key, { spec, branch });
      await ledger.setMeta(key, { budgetUsd: budget });
    }
    const human = humanLimits(await ledger.getGoal(key));
    const result = await runConfiguredGoal({
      repo,
      spec,
      config,
      ledger,
      workspace: {
        remote: repo,
        ...auth,
        dir,
        branch,
        ...(values.base ? { baseBranch: values.base } : {}),
        ...clone,
        // Ready copies made by a detached process: `run` exits with its last line, not after a copy.
        ...pick(SetupCache.fromEnv(workspaceRoot(), process.env, logger, { detachReadyCopies: true }), (setupCache) => ({ setupCache })),
        packageStores: PackageStores.fromEnv(workspaceRoot(), process.env, logger),
      },
      agent: (ctx) => selectAgent(values.agent as AgentChoice, agentDeps(ctx)),
      forge: new ConsoleForge(),
      logger,
      ...(values.approve ? { approve: values.approve } : {}),
      ...(human ? { humanLimits: human } : {}),
      signal: stop.signal,
      ...(values.followBase ? { followBase: config.follow_base } : {}),
    });
    // A finished goal's workspace is released (its tree parked): its checkpoints are on the
    // remote, and a resume (of an escalated goal, say) prepares a new one from the branch. A
    // stopped goal, or one awaiting approval, keeps it for the run that continues it.
    if (result.status === 'LOOP_COMPLETE' || result.status === 'ESCALATED') {
      await releaseWorkspace({ dir, remote: repo, ...clone }).catch((err: unknown) => logger.warn({ err, dir }, 'cannot release the workspace'));
    }
    if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      // After the summary (stderr): how to look at the checkpoints. The workspace is no place for
      // that (its files may belong to the jail's uid); the branch was pushed to --repo.
      const base = values.base ?? (isAbsolute(repo) ? await new Git().tryRunGitDir(localGitDir(repo).gitDir, ['symbolic-ref', '--quiet', '--short', 'HEAD']) : undefined);
      const inspect = inspectCommand({ repo, branch: result.branch, checkpoints: result.checkpoints, cwd: process.cwd(), ...(base ? { base } : {}) });
      // What each attempt did (the ledger's record), then the commits.
      const more = continueHint(result, values.budget);
      process.stderr.write(`${more ? `${more}\n` : ''}attempts: ${await logsCommandLine(ledger, repo, result.goal_id)}\ninspect: ${inspect}\n`);
    }
    return exitCodeFor(result.status);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await store.close();
    release();
  }
}

/** `--budget`: US dollars, as `/goal budget` takes them. */
/** A budget set on the goal (`--budget` here, or `/goal budget`): applied over the config and the spec. */
function humanLimits(goal: { meta: Record<string, unknown> } | undefined): LimitsOverride | undefined {
  const usd = goal && readCoreMeta(goal.meta).budgetUsd;
  return usd !== undefined ? { cost_cap_usd: usd } : undefined;
}

/** For a goal its cost or iteration cap stopped: how to go on. */
function continueHint(result: LoopResult, given: number | undefined): string | undefined {
  if (result.status !== 'STOPPED') return undefined;
  if (result.stop_reason?.startsWith('max_iterations reached')) {
    return `continue: raise max_iterations (in the goal's limits, or the repo config's when the goal sets none), then run the same command again`;
  }
  if (!result.stop_reason?.startsWith('cost_cap_usd reached')) return undefined;
  const more = Math.max(1, Math.ceil(result.cost_usd * 2));
  return `continue: run the same command with --budget <usd> above $${result.cost_usd.toFixed(2)}${given === undefined ? '' : ` (it was ${given})`}, e.g. --budget ${more}`;
}

/**
 * The \`logs\` command for this goal as the user can type it: with the ledger when GOAL_LOOP_DB
 * chose it (not a DATABASE_URL: it may hold a password), and --repo when several repositories
 * have a goal of this id.
 */
async function logsCommandLine(ledger: Ledger, repo: string, goalId: string): Promise<string> {
  const db = process.env.DATABASE_URL ? '' : process.env.GOAL_LOOP_DB ? `GOAL_LOOP_DB=${shellWord(resolve(process.env.GOAL_LOOP_DB))} ` : '';
  const several = (await ledger.listGoals()).filter((g) => g.goalId === goalId).length > 1;
  return `${db}${cliInvocation()} logs ${shellWord(goalId)}${several ? ` --repo ${shellWord(redactUrls(repo))}` : ''}`;
}

/**
 * A command that shows a goal's checkpoints, for a person at a shell: `git -C <repo> log` of the
 * branch pushed to a local repository (from `base`, else its last N commits), or a fetch of it
 * from a URL. The repo is relative when under `cwd`. Never the workspace.
 */
export function inspectCommand(o: { repo: string; branch: string; base?: string; checkpoints: readonly unknown[]; cwd: string }): string {
  if (o.checkpoints.length === 0) return `no checkpoint yet, so nothing pushed to ${o.branch} on ${o.repo}`;
  const last = `-n ${o.checkpoints.length}`;
  if (!isAbsolute(o.repo)) return `git fetch ${shellWord(o.repo)} ${shellWord(o.branch)} && git log --oneline ${last} FETCH_HEAD`;
  const rel = relative(o.cwd, o.repo);
  const dir = rel === '' ? '.' : rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel) ? o.repo : `.${sep}${rel}`;
  const range = o.base ? `${shellWord(o.base)}..${shellWord(o.branch)}` : `${last} ${shellWord(o.branch)}`;
  return `git -C ${shellWord(dir)} log --oneline ${range}`;
}
