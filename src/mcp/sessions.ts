import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { RepoConfig } from '../config/repo-config.js';
import { repoArgument, workspaceDir, workspaceRoot } from '../run/paths.js';
import { SetupCache } from '../workspace/setup-cache.js';
import { checkRepoReachable } from '../run/repo-check.js';
import { sandboxForConfig } from '../run/compose-goal-run.js';
import { loadGoalSpecFile, parseGoalSpec } from '../goal/parse.js';
import type { GoalSpec } from '../goal/schema.js';
import { slugify } from '../goal/slug.js';
import type { Ledger } from '../ports/ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import { GoalSession, SessionError } from './goal-session.js';
import { pick } from '../common/pick.js';
import { configForMcpGoal, type AskHuman } from './config-source.js';

export interface SessionsOptions {
  ledger: Ledger;
  logger: Logger;
  /** Default repository (`goal-loop mcp --repo`), else the server's working directory. */
  repo?: string;
  /** `--config`: the repo config file, instead of the one committed in the repository. */
  configFile?: string;
  /** `--approve`: task ids a human approved when configuring the server. */
  approve?: readonly string[];
  env?: NodeJS.ProcessEnv;
  controlPollMs?: number;
  /** The sandbox for a config (default: selectSandbox, which refuses a missing bwrap). */
  sandboxFor?: (config: RepoConfig) => Promise<Sandbox>;
}

/** Where a spec comes from in `goal_plan` and `goal_start`: a file, or inline text. */
export interface SpecSource {
  goal?: string | undefined;
  spec?: string | undefined;
}

const PLACEHOLDER_ID = 'mcp-goal-without-id';

/** Reads a spec from a file (relative to the server's directory) or from inline JSON/YAML/markdown. */
export async function loadSpec(source: SpecSource): Promise<GoalSpec> {
  if (!source.goal === !source.spec) throw new SessionError('give exactly one of `goal` (a spec file) or `spec` (the spec text)');
  if (source.goal) return loadGoalSpecFile(resolve(source.goal));
  const spec = parseGoalSpec(source.spec!, { source: 'spec', defaultGoalId: PLACEHOLDER_ID });
  return spec.goal_id === PLACEHOLDER_ID ? { ...spec, goal_id: slugify(spec.objective, 60) || 'goal' } : spec;
}

/** The goals this server drives, one session per repository and goal id. */
export class Sessions {
  private readonly sessions = new Map<string, GoalSession>();
  private readonly sandboxes = new Map<string, Promise<Sandbox>>();

  constructor(private readonly opts: SessionsOptions) {}

  /**
   * The session of a goal (new, or the existing one when it is idle or already this goal).
   * `ask` reaches the human when the client asks for a repository or base the server was not
   * configured with (see configForMcpGoal).
   */
  async open(input: SpecSource & { repo?: string | undefined; base?: string | undefined }, ask: AskHuman): Promise<GoalSession> {
    const spec = await loadSpec(input);
    // Credentials in a URL stay in memory, for the remote's git processes only.
    const { repo, auth } = repoArgument(input.repo ?? this.opts.repo ?? process.cwd());
    await checkRepoReachable(repo, undefined, auth);
    const id = `${repo}\0${spec.goal_id}`;
    const existing = this.sessions.get(id);
    if (existing?.running) return existing;
    const ownRepo = repoArgument(this.opts.repo ?? process.cwd()).repo;
    const config = await configForMcpGoal({ repo, ownRepo, base: input.base, configFile: this.opts.configFile, ask });
    const session = await GoalSession.open({
      repo,
      auth,
      spec,
      config,
      ledger: this.opts.ledger,
      sandbox: await this.sandbox(config),
      logger: this.opts.logger,
      workspaceDir: workspaceDir(workspaceRoot(this.opts.env), repo, spec.goal_id),
      ...pick(SetupCache.fromEnv(workspaceRoot(this.opts.env), this.opts.env, this.opts.logger), (setupCache) => ({ setupCache })),
      ...(input.base ? { baseBranch: input.base } : {}),
      ...(this.opts.approve ? { approve: this.opts.approve } : {}),
      ...(this.opts.controlPollMs ? { controlPollMs: this.opts.controlPollMs } : {}),
    });
    this.sessions.set(id, session);
    return session;
  }

  /** The session a tool call means: by goal id, or the only one. */
  find(goalId?: string): GoalSession {
    const all = [...this.sessions.values()];
    if (goalId === undefined) {
      if (all.length === 1) return all[0]!;
      throw new SessionError(all.length === 0 ? 'no goal was started in this session: call goal_start first' : `several goals are open (${all.map((s) => s.key.goalId).join(', ')}): give goal_id`);
    }
    const matches = all.filter((s) => s.key.goalId === goalId);
    if (matches.length === 0) throw new SessionError(`goal "${goalId}" was not started in this session: call goal_start`);
    return matches.at(-1)!;
  }

  list(): GoalSession[] {
    return [...this.sessions.values()];
  }

  /** Pauses every running goal (on shutdown): the next server resumes them from their checkpoints. */
  async closeAll(): Promise<void> {
    await Promise.all(this.list().map((s) => s.close()));
  }

  private sandbox(config: RepoConfig): Promise<Sandbox> {
    let sandbox = this.sandboxes.get(config.sandbox);
    if (!sandbox) {
      sandbox = (this.opts.sandboxFor ?? sandboxForConfig(this.opts.logger))(config);
      // A refusal (no bwrap) is answered each time, not cached as a rejected promise forever.
      sandbox.catch(() => this.sandboxes.delete(config.sandbox));
      this.sandboxes.set(config.sandbox, sandbox);
    }
    return sandbox;
  }
}

