import type { Logger } from 'pino';
import { childLogger } from '../common/child-logger.js';
import type { RepoConfig } from '../config/repo-config.js';
import type { LoopLimits } from '../goal/limits.js';
import { type CoreGoalMeta, readCoreMeta } from '../goal/meta.js';
import type { LoopResult } from '../goal/result.js';
import type { GoalSpec, LimitsOverride } from '../goal/schema.js';
import type { AttemptRecord, GoalKey, GoalRecord, Ledger, TaskRecord } from '../ports/ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import { runLimits } from '../run/compose-goal-run.js';
import { tryLock } from '../run/lock.js';
import { runConfiguredGoal } from '../run/run-configured-goal.js';
import type { GitOptions } from '../workspace/git.js';
import type { PackageStores } from '../workspace/package-stores.js';
import type { SetupCache } from '../workspace/setup-cache.js';
import { type ExternalReport, Handoff, type PendingAttempt } from './handoff.js';
import { liveBudgetTripped } from './limits-policy.js';
import { McpForge } from './mcp-forge.js';

export interface GoalSessionOptions {
  /** The repository (normalized path or URL): clone source and push target. */
  repo: string;
  /** Credentials split off `repo`, for the git processes that talk to the remote. */
  auth?: Pick<GitOptions, 'remoteConfig'>;
  spec: GoalSpec;
  config: RepoConfig;
  ledger: Ledger;
  sandbox: Sandbox;
  logger: Logger;
  /** The goal's private clone, where the external agent edits files. */
  workspaceDir: string;
  /** Put back what the same setup produced before on the repository. */
  setupCache?: SetupCache;
  /** Package managers' stores per repository, bound into setup (see PackageStores.fromEnv). */
  packageStores?: PackageStores;
  baseBranch?: string;
  /** Task ids a human approved on the server's command line (`all` approves every task). */
  approve?: readonly string[];
  /** How fast a pause or stop reaches a running verification. */
  controlPollMs?: number;
  clock?: () => number;
}

/** Where the driver stands: an attempt to work on, or the goal at rest. */
export type Turn = { kind: 'build'; pending: PendingAttempt } | { kind: 'rest' };

/** Raised for a call the driver made at the wrong time or with wrong input: a tool error, not a crash. */
export class SessionError extends Error {
  override name = 'SessionError';
}

/**
 * One goal driven by an external agent over MCP. It runs the ordinary loop (`runGoal`, with the
 * same workspace, branch, checkpoints, ledger and sandbox as `goal-loop run`) with a Handoff as
 * its agent: each attempt pauses at the agent step until `task_complete`, then the loop itself
 * verifies, checkpoints, rolls back, retries or escalates, and enforces every budget.
 */
export class GoalSession {
  readonly key: GoalKey;
  readonly branch: string;
  readonly forge: McpForge;
  private readonly handoff: Handoff;
  private readonly clock: () => number;
  private run: Promise<void> | undefined;
  private runStartedAt = 0;
  private overrides: LimitsOverride = {};
  /** The result of the last run that ended in this process. */
  lastResult: LoopResult | undefined;

  private constructor(private readonly opts: GoalSessionOptions) {
    this.key = { repo: opts.repo, goalId: opts.spec.goal_id };
    this.branch = `goal/${opts.spec.goal_id}`;
    this.clock = opts.clock ?? Date.now;
    this.forge = new McpForge(opts.logger);
    this.handoff = new Handoff(() => this.liveGuard(), this.clock);
  }

  /** A session for the goal; budget changes made through `goal_config` earlier are kept. */
  static async open(opts: GoalSessionOptions): Promise<GoalSession> {
    const session = new GoalSession(opts);
    const goal = await opts.ledger.upsertGoal(session.key, { spec: opts.spec, branch: session.branch });
    session.overrides = readCoreMeta(goal.meta).mcp_limits ?? {};
    return session;
  }

  get spec(): GoalSpec {
    return this.opts.spec;
  }

  get workspaceDir(): string {
    return this.opts.workspaceDir;
  }

  get running(): boolean {
    return this.run !== undefined;
  }

  goal(): Promise<GoalRecord | undefined> {
    return this.opts.ledger.getGoal(this.key);
  }

  tasks(): Promise<TaskRecord[]> {
    return this.opts.ledger.listTasks(this.key);
  }

  attempts(taskId?: string): Promise<AttemptRecord[]> {
    return this.opts.ledger.listAttempts(this.key, taskId);
  }

  /** Records a human's approval of tasks (the next run lets them through). */
  async approve(taskIds: readonly string[]): Promise<void> {
    const known = new Set(this.opts.spec.tasks.map((t) => t.id));
    const unknown = taskIds.filter((id) => !known.has(id));
    if (unknown.length > 0) throw new SessionError(`unknown task${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`);
    for (const id of taskIds) await this.opts.ledger.updateTask(this.key, id, { approved: true });
  }

  /** The limits in force: repo config, tightened by the spec, then `goal_config` changes (as the run computes them). */
  limits(): LoopLimits {
    return runLimits(this.opts.config, this.opts.spec, this.overrides).limits;
  }

  /** Starts a run of the loop (a resume when checkpoints exist); no-op while one runs. */
  begin(): void {
    if (this.run !== undefined) return;
    const release = tryLock(`${this.opts.workspaceDir}.lock`);
    const { opts } = this;
    this.runStartedAt = this.clock();
    const log = childLogger(opts.logger, { goal: opts.spec.goal_id, driver: 'mcp' });
    this.run = runConfiguredGoal({
      repo: opts.repo,
      // The limits in force, already vetted, are pinned: the ledger's copy of the spec shows them to `status`.
      spec: opts.spec,
      config: opts.config,
      humanLimits: this.overrides,
      pinLimits: true,
      ledger: opts.ledger,
      workspace: {
        remote: opts.repo,
        ...opts.auth,
        dir: opts.workspaceDir,
        ...(opts.setupCache ? { setupCache: opts.setupCache } : {}),
        ...(opts.packageStores ? { packageStores: opts.packageStores } : {}),
        branch: this.branch,
        ...(opts.baseBranch ? { baseBranch: opts.baseBranch } : {}),
      },
      sandbox: opts.sandbox,
      forge: this.forge,
      agent: this.handoff,
      logger: log,
      ...(opts.approve?.length ? { approve: [...opts.approve] } : {}),
      controlPollMs: opts.controlPollMs ?? 100,
      clock: this.clock,
    })
      .then(
        (result) => {
          this.lastResult = result;
        },
        (err: unknown) => log.error({ err }, 'the goal loop failed'),
      )
      .finally(() => {
        this.run = undefined;
        release();
        this.handoff.notify();
      });
  }

  /** Waits until the loop hands out an attempt or comes to rest. */
  async turn(): Promise<Turn> {
    while (true) {
      const pending = this.handoff.current();
      if (pending) return { kind: 'build', pending };
      const run = this.run;
      if (!run) return { kind: 'rest' };
      await Promise.race([this.handoff.changed(), run]);
    }
  }

  /** The attempt the driver is working on, if any. */
  pending(): PendingAttempt | undefined {
    return this.handoff.current();
  }

  /** Ends the driver's work on the attempt: the loop verifies it. Returns the attempt number. */
  complete(taskId: string, report: ExternalReport): number {
    const pending = this.handoff.current();
    if (!pending) throw new SessionError(`no task is waiting for work${this.run !== undefined ? '' : ': the goal is not running'}; call next_task`);
    if (pending.input.task.id !== taskId) {
      throw new SessionError(`task "${taskId}" is not the current task; the current task is "${pending.input.task.id}" (attempt ${pending.input.attempt})`);
    }
    this.handoff.complete(report);
    return pending.input.attempt;
  }

  /** Asks the running loop to pause or stop (the attempt in progress is rolled back) and waits for it. */
  async interrupt(request: 'pause' | 'stop'): Promise<void> {
    const run = this.run;
    if (!run) return;
    await this.opts.ledger.setControl(this.key, request);
    await run;
  }

  /** Applies vetted limit changes; remembered in the ledger for later runs and sessions. */
  async setLimits(patch: LimitsOverride): Promise<void> {
    this.overrides = { ...this.overrides, ...patch };
    const meta: Pick<CoreGoalMeta, 'mcp_limits'> = { mcp_limits: this.overrides };
    await this.opts.ledger.setMeta(this.key, meta);
    // A lowered budget binds at once: an attempt not yet reported stops here.
    const tripped = await this.liveGuard();
    if (tripped) this.handoff.stopForBudget(tripped);
  }

  /** The live budgets (those goal_config may lower during a run), as a stop reason when tripped. */
  private async liveGuard(): Promise<string | undefined> {
    const goal = await this.opts.ledger.getGoal(this.key);
    if (!goal) return undefined;
    return liveBudgetTripped(this.limits(), goal.counters, this.runStartedAt, this.clock());
  }

  /** Pauses the run (server shutdown): the attempt in progress is rolled back; a new session resumes. */
  async close(): Promise<void> {
    await this.interrupt('pause').catch((err: unknown) => this.opts.logger.warn({ err, goal: this.key.goalId }, 'cannot stop the goal'));
  }
}
