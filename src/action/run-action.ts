import { rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import { makeDirs } from '../common/make-dirs.js';
import { pick } from '../common/pick.js';
import type { RepoConfig } from '../config/repo-config.js';
import { configLimits } from '../config/repo-config.js';
import { claudeHooks } from '../github/claude-hooks.js';
import { GitHubForge, type Octokit, type WriterIdentity } from '../github/github-forge.js';
import { goalEventFromPayload } from '../github/handlers/payload-events.js';
import { OctokitIssueForge } from '../github/octokit-issue-forge.js';
import { loadRepoConfig } from '../github/repo-config-loader.js';
import { serviceSettings } from '../github/service-settings.js';
import { snapshotFromLedger, workGoal } from '../github/work-goal.js';
import { RESTING_STATES } from '../goal/states.js';
import { MemoryWriteBudget } from '../ledger/memory-write-budget.js';
import { openSqliteStore, type Store } from '../ledger/open-ledger.js';
import { GoalAbandonedError } from '../loop/goal-abandoned.js';
import type { GoalKey } from '../ports/goal-ledger.js';
import type { GoalMode } from '../ports/queue.js';
import { type Sandbox, SandboxUnavailableError } from '../ports/sandbox.js';
import { sandboxForConfig } from '../run/compose-goal-run.js';
import type { EventBase, GoalEvent, IssueRef } from '../steering/events.js';
import { readGitHubMeta } from '../steering/goal-meta.js';
import { EventProcessor } from '../steering/handle/event-processor.js';
import { PackageStores } from '../workspace/package-stores.js';
import { type CarriedState, carriedLine, carriedStateOf, spendKey } from './carried-state.js';
import { type ActionContext, DEFAULT_API_URL } from './context.js';
import { dispatchContinuation } from './continuation.js';
import { goalIssueOf } from './goal-issue.js';
import { DEFAULT_HOLDER_WAIT, type HolderWait, holderAlive, waitForHolder } from './holder.js';
import { actionIdentity } from './identity.js';
import { jailPreflight } from './jail-preflight.js';
import { type CommandSource, missedCommandEvents, newestCommandId, pullRequestComments } from './missed-commands.js';
import { missedReviewEvents, newestReviewId, reviewSource } from './missed-reviews.js';
import { progressPrinter } from './progress-lines.js';
import { type GitHubGoalRecord, type GoalHome, readGoalRecord, seedGoal } from './rebuild.js';

/** Time kept back from `max_run_minutes` to stop cleanly, report and dispatch the continuation. */
const STOP_MARGIN_MS = 60_000;

export interface ActionDeps {
  logger: Logger;
  env: NodeJS.ProcessEnv;
  /** Tests: shorter waits for a holder run, the status interval, the jail's probe. */
  holderWait?: HolderWait;
  minUpdateIntervalMs?: number;
  jailProbe?: () => Promise<void>;
  /** Tests: the run's time budget in milliseconds (instead of max_run_minutes). */
  runBudgetMs?: number;
  /** A line of the job's log (the live task list); default stdout. */
  print?: (line: string) => void;
}

/** What a run did, for the job summary, the outputs and the exit code. */
export interface ActionOutcome {
  /** 0: the run did what the event asked (whatever the goal's state); 1: it could not (the line says why). */
  exitCode: number;
  /** Why nothing was done, or what went wrong: one line. */
  note?: string;
  error?: string;
  key?: GoalKey;
  continued?: boolean;
}

/**
 * `goal-loop action`: one workflow run, the GitHub App's policy wired to the runner. The event is
 * parsed as the App's handlers parse a webhook; the goal it is about is rebuilt from GitHub into an
 * empty ledger (rebuild.ts); the policy decides and acts (handle/event-processor.ts) with the same
 * forge as the App; work it schedules is done here, in this process, within the run's time budget;
 * a goal still going then is handed to a new run (continuation.ts). What the ledger learned goes
 * back to GitHub in the status comment, so the runner can vanish at any moment.
 */
export async function runAction(ctx: ActionContext, store: Store, o: Octokit, deps: ActionDeps): Promise<ActionOutcome> {
  const log = deps.logger;
  const self = await actionIdentity(o, ctx.inputs.botLogin, ctx.apiUrl === DEFAULT_API_URL);
  const home: GoalHome = { owner: ctx.owner, repo: ctx.repo, cloneUrl: ctx.cloneUrl, htmlUrl: ctx.htmlUrl, defaultBranch: defaultBranchOf(ctx) };
  const target = await targetOf(ctx, o);
  if ('note' in target) return target.error ? { exitCode: 1, error: target.note } : { exitCode: 0, note: target.note };
  const { issueNumber, event } = target;
  const ledger = store.ledger;
  let record = await readGoalRecord(o, self, home, issueNumber, log);
  const { key } = record;
  const runner = { runId: ctx.runId, attempt: ctx.runAttempt };
  // Another run may hold the goal (the concurrency group missed it): wait for it to end, then read
  // the record again: it is the one that run left.
  let polls = 0;
  const alive = async () => {
    if (polls++ > 0) record = await readGoalRecord(o, self, home, issueNumber, log);
    const s = record.state;
    return s !== undefined && !RESTING_STATES.has(s.state) && (await holderAlive(o, ctx, s.runner, ctx, log));
  };
  if (await waitForHolder(alive, deps.holderWait ?? DEFAULT_HOLDER_WAIT, log)) {
    return {
      exitCode: 1,
      key,
      error: `run ${record.state?.runner?.runId} still works goal #${issueNumber}: this run leaves it alone, its event unapplied (the workflow's concurrency group should keep runs of one goal apart)`,
    };
  }
  await seedGoal(ledger, record, home);
  let scheduled: GoalMode | undefined;
  const processor = new EventProcessor({
    ledger,
    logger: log,
    forgeFor: async () => triggerLabelForge(new OctokitIssueForge(o, ctx.owner, ctx.repo, ctx.inputs.configPath), ctx.inputs.triggerLabel),
    schedule: async (_key, mode) => {
      scheduled = strongest(scheduled, mode);
    },
    isRunning: async () => false,
    cancel: async () => undefined,
  });
  // Commands whose own run never came (or came before this goal's record knew them), oldest first; then this run's event.
  const sources = await commandSources(o, ctx, record, issueNumber);
  const reviews = record.state ? await reviewSource(o, ctx.owner, ctx.repo, readGitHubMeta(record.state.meta).prNumber) : undefined;
  const carriedMeta = record.state?.meta ?? {};
  const missedCommands = record.state ? missedCommandEvents(sources, numberOr0(carriedMeta.lastCommandId), self, eventBaseOf(ctx), await issueRefOf(o, ctx, issueNumber)) : [];
  const missedReviews = missedReviewEvents(reviews, numberOr0(carriedMeta.lastReviewId), self, eventBaseOf(ctx));
  // Reviews first: a review's task is then in the plan a command (approve, retry) acts on.
  for (const e of [...missedReviews, ...missedCommands]) await processor.handle(e);
  const replayed = (e: GoalEvent) => (e.type === 'command' && missedCommands.some((m) => m.commentId === e.commentId)) || (e.type === 'review' && missedReviews.some((m) => m.reviewId === e.reviewId));
  // Never a command of goal-loop's own writer (a personal access token's user writes the escalation, which quotes output).
  const own = event?.type === 'command' && 'user' in self && event.sender === self.user;
  if (event && !replayed(event) && !own) await processor.handle(event);
  const goal = await ledger.getGoal(key);
  if (!goal) return { exitCode: 0, key, note: event ? 'nothing to do for this event' : `issue #${issueNumber} has no goal: label it \`${ctx.inputs.triggerLabel}\` to start one` };
  await ledger.setMeta(key, {
    lastCommandId: Math.max(newestCommandId(sources), numberOr0(carriedMeta.lastCommandId)),
    lastReviewId: Math.max(newestReviewId(reviews), numberOr0(carriedMeta.lastReviewId), event?.type === 'review' ? event.reviewId : 0),
  });
  // A goal left going (its run ran out of time, or died) goes on with whichever run comes next.
  // (A pause or stop asked meanwhile is honoured by that run at once: see workGoal's honorPendingControl.)
  if (!RESTING_STATES.has(goal.state)) scheduled = strongest(scheduled, 'run');
  const carry = carrier(store, key, runner);
  const forgeOptions = { identity: async () => self, checkRuns: !('user' in self), awaitRepoChecks: false, carry: carry.options };
  if (!scheduled) {
    if (changed(record.state, await carriedStateOf(ledger, key, null))) await reportRecord(o, ctx, store, key, forgeOptions, log);
    return { exitCode: 0, key };
  }
  // The goal is taken: its status comment names this run (and carries the record) before any work,
  // so a run that starts meanwhile leaves it alone, and a runner lost at once loses nothing.
  if (scheduled !== 'status') await reportRecord(o, ctx, store, key, forgeOptions, log, 'comment');
  return work(ctx, store, o, deps, { key, mode: scheduled, forgeOptions, carry, issueNumber });
}

/** Where `/goal` commands on the goal may be: its issue, and its pull request once it has one. */
async function commandSources(o: Octokit, ctx: ActionContext, record: GitHubGoalRecord, issueNumber: number): Promise<CommandSource[]> {
  const prNumber = record.state ? readGitHubMeta(record.state.meta).prNumber : undefined;
  return [
    { comments: record.comments, issueNumber, isPullRequest: false },
    { comments: await pullRequestComments(o, ctx.owner, ctx.repo, prNumber), issueNumber: prNumber ?? 0, isPullRequest: true },
  ];
}

/** The repository part of a steering event, from this run's environment. */
function eventBaseOf(ctx: ActionContext): Omit<EventBase, 'sender' | 'deliveryId'> {
  const repository = { name: ctx.repo, owner: { login: ctx.owner }, clone_url: ctx.cloneUrl, html_url: ctx.htmlUrl, default_branch: defaultBranchOf(ctx) };
  return { installationId: 0, owner: ctx.owner, repo: ctx.repo, repository };
}

async function issueRefOf(o: Octokit, ctx: ActionContext, issueNumber: number): Promise<IssueRef> {
  const { data } = await o.rest.issues.get({ owner: ctx.owner, repo: ctx.repo, issue_number: issueNumber });
  return { number: data.number, title: data.title, body: data.body ?? null, user: data.user ? { login: data.user.login } : null, labels: data.labels };
}

const numberOr0 = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

interface WorkInput {
  key: GoalKey;
  mode: GoalMode;
  issueNumber: number;
  forgeOptions: { identity: () => Promise<WriterIdentity>; checkRuns: boolean; awaitRepoChecks: boolean; carry: Carrier['options'] };
  carry: Carrier;
}

/** One turn of the goal in this process, stopped at the run's time budget and handed to a new run then. */
async function work(ctx: ActionContext, store: Store, o: Octokit, deps: ActionDeps, w: WorkInput): Promise<ActionOutcome> {
  const log = deps.logger;
  const jail = await jailPreflight({ sandbox: ctx.inputs.sandbox, ...pick(deps.jailProbe, (probe) => ({ probe })) });
  // max_run_minutes counts from this process's start (a wait for another run included).
  const budgetMs = deps.runBudgetMs ?? Math.max(60_000, ctx.inputs.maxRunMinutes * 60_000 - STOP_MARGIN_MS - process.uptime() * 1000);
  const timeUp = new AbortController();
  const timer = setTimeout(() => timeUp.abort(), budgetMs);
  const sandboxFor = async (config: RepoConfig): Promise<Sandbox> => {
    if (!jail.ok) throw new SandboxUnavailableError(jail.line);
    return sandboxForConfig(log)({ ...config, sandbox: ctx.inputs.sandbox });
  };
  try {
    await workGoal(
      {
        ledger: store.ledger,
        logger: log,
        auth: async () => o,
        workspaceRoot: `${ctx.tempDir}/work`,
        // On the runner for this job only: setup's package managers keep their stores out of the tree.
        packageStores: PackageStores.fromEnv(`${ctx.tempDir}/work`, deps.env, log),
        sandboxFor,
        workerId: `action:${ctx.runId}:${ctx.runAttempt}`,
        effectClaimMs: 60_000,
        abandon: timeUp.signal,
        // The ledger lives on this runner only: a push left in its outbox would end with the job.
        inlinePushes: true,
        forgeOptions: { ...w.forgeOptions, progress: progressPrinter(deps.print ?? ((line) => process.stdout.write(`${line}\n`))) },
        configPath: ctx.inputs.configPath,
        ...pick(deps.minUpdateIntervalMs, (minUpdateIntervalMs) => ({ minUpdateIntervalMs })),
        ...claudeHooks(modelEnv(ctx, deps.env), log),
      },
      w.key,
      w.mode,
    );
  } catch (err) {
    if (!(err instanceof GoalAbandonedError) || !timeUp.signal.aborted) throw err;
    // Out of time: the attempt in progress is dropped (checkpoints are pushed as they are made);
    // the record goes back to GitHub with no run holding the goal, then the next run is started.
    w.carry.release();
    await reportRecord(o, ctx, store, w.key, w.forgeOptions, log);
    const workflow = ctx.inputs.workflow ?? ctx.workflowFile;
    if (!workflow) return { exitCode: 1, key: w.key, error: 'the run reached max_run_minutes, and the workflow to continue in is unknown: set the `workflow` input' };
    await dispatchContinuation(o, { owner: ctx.owner, repo: ctx.repo, workflow, ref: continuationRef(ctx), issueNumber: w.issueNumber });
    log.info({ workflow, issue: w.issueNumber }, 'time budget reached: the goal continues in a new run');
    return { exitCode: 0, key: w.key, continued: true, note: `max_run_minutes reached: the goal continues in a new run of ${workflow}` };
  } finally {
    clearTimeout(timer);
  }
  return jail.ok ? { exitCode: 0, key: w.key } : { exitCode: 1, key: w.key, error: jail.line };
}

interface Carrier {
  options: { footer: (body: string) => Promise<string>; key: (s: { iterations: number; costUsd: number }) => string };
  /** From now on, the state says no run holds the goal. */
  release(): void;
}

/** What the status comment carries: the goal's record, held by this run while the goal is going. */
function carrier(store: Store, key: GoalKey, runner: NonNullable<CarriedState['runner']>): Carrier {
  let released = false;
  return {
    options: {
      footer: async (body) => {
        const goal = await store.ledger.getGoal(key);
        const holding = !released && goal !== undefined && !RESTING_STATES.has(goal.state);
        const state = await carriedStateOf(store.ledger, key, holding ? runner : null);
        if (!state) throw new Error(`goal ${key.repo}#${key.goalId} has no GitHub home to carry`);
        return carriedLine(state, body);
      },
      key: (s) => spendKey(s.iterations, s.costUsd),
    },
    release: () => {
      released = true;
    },
  };
}

/** Writes the goal's status comment (and the record it carries) now. */
async function reportRecord(o: Octokit, ctx: ActionContext, store: Store, key: GoalKey, forgeOptions: WorkInput['forgeOptions'], log: Logger, how: 'comment' | 'all' = 'all'): Promise<void> {
  const goal = (await store.ledger.getGoal(key))!;
  const g = readGitHubMeta(goal.meta).github!;
  const forge = new GitHubForge({ octokit: o, goal: g, key, ledger: store.ledger, attemptLog: store.ledger, logger: log, ...forgeOptions });
  // The limits shown are the config's, as a run shows them (a config that cannot be read shows the spec's).
  const config = await loadRepoConfig(o, ctx.owner, ctx.repo, ctx.inputs.configPath).catch(() => undefined);
  const s = await snapshotFromLedger(store.ledger, key, g, config ? configLimits(config) : {});
  await (how === 'comment' ? forge.writeStatusComment(s) : forge.flush(s));
}

/** Whether the record differs from what the status comment carried (the run holding it aside). */
function changed(before: CarriedState | undefined, after: CarriedState | undefined): boolean {
  // When an attempt's entry was written is not carried exactly (a seeded ledger stamps its own time).
  const strip = (s: CarriedState | undefined) => (s ? canonical({ ...s, runner: null, attempts: s.attempts.map(({ at: _at, ...a }) => a) }) : '');
  return strip(before) !== strip(after);
}

/** JSON with every object's keys sorted: equal values, equal text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

const MODE_ORDER: readonly GoalMode[] = ['status', 'plan', 'run'];
const strongest = (a: GoalMode | undefined, b: GoalMode): GoalMode => (a && MODE_ORDER.indexOf(a) > MODE_ORDER.indexOf(b) ? a : b);

/** The issue a run is about, and the policy's event for it (none for a dispatch: it goes on with the goal). */
async function targetOf(ctx: ActionContext, o: Octokit): Promise<{ issueNumber: number; event?: GoalEvent } | { note: string; error?: boolean }> {
  if (ctx.eventName === 'workflow_dispatch') {
    const raw = (ctx.payload.inputs as Record<string, unknown> | undefined)?.issue;
    const n = Number(String(raw ?? '').replace(/^#/, ''));
    if (!Number.isSafeInteger(n) || n <= 0) return { note: `workflow_dispatch needs the input \`issue\` (the goal's issue number), not ${JSON.stringify(raw ?? null)}`, error: true };
    return { issueNumber: n };
  }
  const parsed = goalEventFromPayload(ctx.eventName, `${ctx.runId}-${ctx.runAttempt}`, ctx.payload, 0);
  if (!parsed) return { note: `nothing to do: this ${ctx.eventName} event is not one goal-loop acts on` };
  // The remote and the links are this run's (GITHUB_SERVER_URL), whatever the payload says.
  const event = { ...parsed, repository: { ...parsed.repository, clone_url: ctx.cloneUrl, html_url: ctx.htmlUrl } } as GoalEvent;
  const issueNumber = await goalIssueOf(o, event);
  if (issueNumber === undefined) return { note: 'nothing to do: the pull request is not on a goal branch of this repository' };
  return { issueNumber, event };
}

/**
 * The branch the continuation's workflow is read from: the one this run's was, for events whose ref
 * is a branch (an issue's and a comment's run on the default branch; a dispatch on the branch it
 * names); the default branch for a pull request's events, whose ref is the PR's merge ref.
 */
function continuationRef(ctx: ActionContext): string {
  const onBranch = ['issues', 'issue_comment', 'workflow_dispatch'].includes(ctx.eventName);
  return onBranch && ctx.ref ? ctx.ref : defaultBranchOf(ctx);
}

function defaultBranchOf(ctx: ActionContext): string {
  const repo = ctx.payload.repository as { default_branch?: unknown } | undefined;
  return typeof repo?.default_branch === 'string' && repo.default_branch ? repo.default_branch : 'main';
}

/** The steering forge with the workflow's trigger label in force (the Action's `trigger_label`, not the config's `label`). */
function triggerLabelForge(forge: OctokitIssueForge, label: string): OctokitIssueForge {
  const loadConfig = forge.loadConfig.bind(forge);
  return Object.assign(forge, { loadConfig: async () => ({ ...(await loadConfig()), label }) });
}

/** The model's settings from the inputs, as the agent reads them from the environment. */
function modelEnv(ctx: ActionContext, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const i = ctx.inputs;
  return {
    ...env,
    ...pick(i.anthropicApiKey, (ANTHROPIC_API_KEY) => ({ ANTHROPIC_API_KEY })),
    ...pick(i.anthropicBaseUrl, (ANTHROPIC_BASE_URL) => ({ ANTHROPIC_BASE_URL })),
    ...pick(i.model, (GOAL_LOOP_MODEL) => ({ GOAL_LOOP_MODEL })),
    // The input's default `anthropic` leaves a GOAL_LOOP_PROVIDER of the job's environment in force.
    ...(i.provider === 'anthropic' ? {} : { GOAL_LOOP_PROVIDER: i.provider }),
    ...pick(i.awsRegion, (AWS_REGION) => ({ AWS_REGION })),
    ...pick(i.vertexProjectId, (ANTHROPIC_VERTEX_PROJECT_ID) => ({ ANTHROPIC_VERTEX_PROJECT_ID })),
    ...pick(i.vertexRegion, (CLOUD_ML_REGION) => ({ CLOUD_ML_REGION })),
  };
}

/** The run's store: a SQLite file in a folder of its own, emptied first (nothing is kept from an earlier job). */
export async function openActionStore(ctx: ActionContext): Promise<Store> {
  await rm(ctx.tempDir, { recursive: true, force: true });
  makeDirs(ctx.tempDir);
  return openSqliteStore(`${ctx.tempDir}/ledger.db`);
}

/** The run's Octokit: the token, the API of this GitHub, and the App's write budget and spacing (in memory). */
export function actionOctokit(ctx: ActionContext, env: NodeJS.ProcessEnv, log: Logger): Octokit {
  const { Octokit: ActionOctokit } = serviceSettings(env, new MemoryWriteBudget());
  return new ActionOctokit({
    auth: { token: ctx.inputs.githubToken, installationId: `repo:${ctx.owner}/${ctx.repo}` },
    baseUrl: ctx.apiUrl,
    log: log.child({ name: 'octokit' }),
  }) as unknown as Octokit;
}
