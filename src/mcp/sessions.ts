import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import type { Logger } from 'pino';
import { pick } from '../common/pick.js';
import type { RepoConfig } from '../config/repo-config.js';
import { loadGoalSpecFile, parseGoalSpec } from '../goal/parse.js';
import type { GoalSpec } from '../goal/schema.js';
import { slugify } from '../goal/slug.js';
import type { Ledger } from '../ports/ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import { sandboxForConfig } from '../run/compose-goal-run.js';
import { repoArgument, workspaceDir, workspaceRoot } from '../run/paths.js';
import { checkRepoReachable } from '../run/repo-check.js';
import { PackageStores } from '../workspace/package-stores.js';
import { SetupCache } from '../workspace/setup-cache.js';
import { type AskHuman, configForMcpGoal, confirmRepository } from './config-source.js';
import { GoalSession, SessionError } from './goal-session.js';

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

/**
 * Reads a spec from a file (relative to the server's directory) or from inline JSON/YAML/markdown.
 * A file is read only under one of `roots` (the repository, the server's working directory), as
 * its real path: anywhere else (a symlink pointing out included) needs the human's yes.
 */
export async function loadSpec(source: SpecSource, where?: { roots: readonly string[]; ask: AskHuman }): Promise<GoalSpec> {
  if (!source.goal === !source.spec) throw new SessionError('give exactly one of `goal` (a spec file) or `spec` (the spec text)');
  if (source.goal) {
    const path = resolve(source.goal);
    if (where) await confirmSpecFile(path, where.roots, where.ask);
    return loadGoalSpecFile(path);
  }
  const spec = parseGoalSpec(source.spec!, { source: 'spec', defaultGoalId: PLACEHOLDER_ID });
  return spec.goal_id === PLACEHOLDER_ID ? { ...spec, goal_id: slugify(spec.objective, 60) || 'goal' } : spec;
}

async function confirmSpecFile(path: string, roots: readonly string[], ask: AskHuman): Promise<void> {
  const real = await realpath(path).catch(() => path);
  const under = await Promise.all(
    roots
      .filter((r) => r.startsWith('/'))
      .map(async (root) => {
        const rel = relative(await realpath(root).catch(() => root), real);
        return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
      }),
  );
  if (under.some(Boolean)) return;
  const what = `read the spec file ${path}, which is outside the repository and the server's working directory`;
  const answer = await ask(`The agent driving goal-loop asks to ${what}. Allow?`, 'Put the spec file in the repository, or pass the spec text as `spec`.');
  if (!answer.ok) throw new SessionError(`nothing read: the agent asked to ${what}; ${answer.reason}`);
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
    const ownRepo = repoArgument(this.opts.repo ?? process.cwd()).repo;
    // Credentials in a URL stay in memory, for the remote's git processes only.
    const { repo, auth } = input.repo === undefined ? repoArgument(this.opts.repo ?? process.cwd()) : repoArgument(input.repo);
    // Before anything reads the path: the client may have planted what is there.
    await confirmRepository({ repo, ownRepo, configFile: this.opts.configFile, ask }, this.opts.env);
    const spec = await loadSpec(input, { roots: [repo, process.cwd()], ask });
    await checkRepoReachable(repo, undefined, auth, this.opts.env);
    const id = `${repo}\0${spec.goal_id}`;
    const existing = this.sessions.get(id);
    if (existing?.running) return existing;
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
      packageStores: PackageStores.fromEnv(workspaceRoot(this.opts.env), this.opts.env, this.opts.logger),
      ...(input.base ? { baseBranch: input.base } : {}),
      ...(this.opts.approve ? { approve: this.opts.approve } : {}),
      ...(this.opts.controlPollMs ? { controlPollMs: this.opts.controlPollMs } : {}),
    });
    this.sessions.set(id, session);
    return session;
  }

  /** A spec for `goal_plan`: a file only under the server's repository or working directory. */
  loadSpec(source: SpecSource, ask: AskHuman): Promise<GoalSpec> {
    return loadSpec(source, { roots: [repoArgument(this.opts.repo ?? process.cwd()).repo, process.cwd()], ask });
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
