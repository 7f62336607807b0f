import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { childLogger } from '../common/child-logger.js';
import { DEFAULT_VERIFICATION_POLICY, type VerificationPolicy } from '../goal/evidence.js';
import type { LoopLimits } from '../goal/limits.js';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { GoalSpec } from '../goal/schema.js';
import { RESTING_STATES } from '../goal/states.js';
import type { TaskAgent } from '../ports/agent.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { Forge } from '../ports/forge.js';
import type { GoalChange, GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { Outbox, PendingEffect } from '../ports/outbox.js';
import type { Sandbox } from '../ports/sandbox.js';
import type { FollowBaseMode, Workspace } from '../ports/workspace.js';
import { EffectPerformer } from './effects.js';
import { finishedAtTip, gateChecksKey } from './finished-tip.js';
import { GoalAbandonedError } from './goal-abandoned.js';
import { initialLoopState } from './initial-loop-state.js';
import { Interruptions } from './interruption.js';
import { PUSH_EFFECT, performLoopEffect } from './outbox.js';
import { PushTracker } from './push-effects.js';
import { RunView } from './run-view.js';
import type { SetupOptions } from './setup-runner.js';
import { StepJournal } from './step-journal.js';
import { decide, type Effect, type FollowedBase, type LoopEvent, type LoopState, type OnEscalation } from './transition.js';

export { GoalAbandonedError } from './goal-abandoned.js';

/** The ledger concerns the loop uses: the goal's record, the attempt record, and the outbox. */
export type LoopLedger = GoalLedger & AttemptLog & Outbox;

export interface RunGoalOptions {
  repo: string;
  spec: GoalSpec;
  /** Only the concerns the loop uses: goals, the attempt record, the outbox. */
  ledger: LoopLedger;
  workspace: Workspace;
  sandbox: Sandbox;
  forge: Forge;
  agent?: TaskAgent;
  logger: Logger;
  /** The limits in force: repo config, tightened by the spec, then a human's changes (computed once, by the run's composition). */
  limits: LoopLimits;
  gate?: string[];
  /** Repo `setup` commands, run once per run before the first task. */
  setup?: string[];
  /** Give the setup commands the network (repo config `network: setup`). */
  setupNetwork?: boolean;
  /** Host variables the setup commands get (repo config `setup_env`, already filtered). */
  setupEnv?: Record<string, string>;
  /** Setup's own timeout and stall bound (repo config `setup_timeout_s`, `setup_stall_s`), and what its failure hint needs. */
  setupOptions?: Omit<SetupOptions, 'progress'>;
  /** Repo config `on_escalation` (default `continue`: independent tasks go on after an escalation). */
  onEscalation?: OnEscalation;
  /**
   * Red before green and protected tests (DESIGN.md §10): the repo config's, tightened by the spec
   * (composeGoalRun derives it). Default: `warn`, the default test paths.
   */
  verification?: VerificationPolicy;
  priority?: string;
  /** Task ids a human approved for this run (`all` approves every task). */
  approve?: string[];
  /** Where full command logs go; default `<workspace>.logs`. */
  logDir?: string;
  /** Fires to stop the run (e.g. SIGINT). */
  signal?: AbortSignal;
  /**
   * Fires when this process must let go of the goal (its lease was lost, or it shuts down): the
   * loop stops at once without writing a new state, and runGoal rejects with GoalAbandonedError,
   * so whoever holds the goal next resumes it from its last checkpoint.
   */
  abandon?: AbortSignal;
  /**
   * Act on a pause/stop request already in the ledger when the run starts (the GitHub worker:
   * a human's request made while the goal was between workers). Default: clear it, since a
   * fresh `goal-loop run` is itself the human's newest word.
   */
  honorPendingControl?: boolean;
  /**
   * Asked before each transition is written: false means this process no longer holds the goal
   * (a worker's lease was taken over), and the run is abandoned before it writes anything more.
   */
  fence?: () => Promise<boolean>;
  /** How often the ledger is polled for pause/stop requests. */
  controlPollMs?: number;
  /**
   * Performs an outbox effect of this goal (default: the loop's kinds, through `forge`). A wiring
   * that records effects of its own kinds (the App's comments) performs those here too.
   */
  performEffect?: (effect: PendingEffect, snapshot: GoalSnapshot) => Promise<void>;
  /**
   * Push each checkpoint before the next task starts, as part of its step (default: from the
   * outbox, while the next task runs). For a wiring whose ledger does not outlive its machine
   * (the GitHub Action's runner): a push left pending there would be lost with it.
   */
  inlinePushes?: boolean;
  /**
   * Repo config `follow_base`: when the base branch moved since the goal branch left it, bring the
   * branch onto its tip first (replayed checkpoints verified again; conflicts and failures become
   * repairs). Default off (the CLI's `--follow-base`, the App and the Action turn it on).
   */
  followBase?: FollowBaseMode | 'off';
  /** Who performs effects (the worker id); default host:pid. */
  effectHolder?: string;
  /** How long a try of an effect keeps others away; a try killed midway is retried after it. Default 30 s. */
  effectClaimMs?: number;
  clock?: () => number;
}

/**
 * Runs one goal to a resting state: prepare, then decide (pure) -> record -> perform, until the
 * goal rests. Safe to call again after a crash: git checkpoints say what is done.
 */
export async function runGoal(opts: RunGoalOptions): Promise<LoopResult> {
  const { spec, ledger, workspace } = opts;
  const clock = opts.clock ?? Date.now;
  const startedAt = clock();
  const key: GoalKey = { repo: opts.repo, goalId: spec.goal_id };
  const log = childLogger(opts.logger, { goal: spec.goal_id });
  const { limits } = opts;
  const verification = opts.verification ?? DEFAULT_VERIFICATION_POLICY;
  const initial = await initialLoopState(ledger, key, {
    spec,
    branch: workspace.branch,
    limits,
    startedAtMs: startedAt,
    priority: opts.priority,
    approve: opts.approve,
    onEscalation: opts.onEscalation,
    baselinePolicy: verification.baseline,
  });
  const view = new RunView(key, spec, workspace.branch, startedAt, clock, initial.state, initial.tokens);
  const interruptions = new Interruptions({ key, ledger, pollMs: opts.controlPollMs ?? 2000, wallMinutes: limits.max_wall_minutes, logger: log, signal: opts.signal, abandon: opts.abandon });
  const forgeEffect = opts.performEffect ?? ((e: PendingEffect, s: GoalSnapshot) => performLoopEffect(opts.forge, e, s));
  // Pushes are this run's own effects: its workspace holds the commits.
  const pushes = new PushTracker();
  view.unpushed = pushes.unpushed;
  const perform = async (e: PendingEffect, s: GoalSnapshot): Promise<void> => {
    if (e.kind === PUSH_EFFECT) return pushes.perform(workspace, e, log);
    // Its push was given up: the commit it names will never be on GitHub (the loop resyncs).
    if (pushes.reportsLostCheckpoint(e)) return;
    return forgeEffect(e, s);
  };
  const holder = opts.effectHolder ?? `${hostname()}:${process.pid}`;
  const journal = new StepJournal({
    ledger,
    key,
    view,
    perform,
    records: (): Pick<GoalChange, 'attempts' | 'attemptEntries'> => performer.takeRecords(),
    holder,
    claimMs: opts.effectClaimMs ?? 30_000,
    logger: log,
    clock,
    abandon: opts.abandon,
  });
  // Waiting for the pushes: the checkpoints queued to go out together go now.
  const pushesSettled = (): Promise<void> => {
    workspace.flushPushes?.();
    return journal.settled();
  };
  const performer: EffectPerformer = new EffectPerformer({
    key,
    spec,
    ledger,
    workspace,
    sandbox: opts.sandbox,
    agent: opts.agent,
    gate: opts.gate ?? [],
    logDir: opts.logDir ?? `${workspace.dir}.logs`,
    logger: log,
    signal: interruptions.signal,
    interruption: () => interruptions.why(),
    snapshot: () => view.snapshot(),
    verification,
    ...(opts.inlinePushes ? {} : { pushes: { tracker: pushes, settled: (): Promise<void> => pushesSettled() } }),
    clock,
  });
  try {
    let event: LoopEvent;
    try {
      await journal.settleLeftovers();
      await interruptions.pendingRequest(opts.honorPendingControl ?? false);
      const prepared = await workspace.prepare();
      let checkpoints = prepared;
      // The base branch moved since the goal branch left it: onto its tip first (DESIGN.md §11).
      const tasks = spec.tasks.map((t) => t.id);
      const followed = opts.followBase && opts.followBase !== 'off' && checkpoints.length > 0 ? await workspace.followBase?.(opts.followBase, tasks) : undefined;
      if (followed) {
        log.info({ onto: followed.onto, mode: followed.mode, replayed: followed.replayed.length, conflict: followed.conflict?.files }, 'the goal branch follows its base branch');
        checkpoints = followed.checkpoints;
      }
      // A finished goal run again on the same tip: nothing to set up, nothing to check again.
      const finished = await finishedAtTip(ledger, key, view.state.tasks, checkpoints, workspace, gateChecksKey(spec, opts.gate ?? []));
      const setupFailure = finished
        ? undefined
        : await performer.setup(opts.setup ?? [], opts.setupNetwork ?? false, opts.setupEnv, {
            ...opts.setupOptions,
            // Shown live: setup can take minutes before the first task.
            progress: (p) => {
              view.setup = p;
              opts.forge.update(view.snapshot()).catch((err: unknown) => log.warn({ err }, 'forge.update failed'));
            },
          });
      let followedBase: FollowedBase | undefined;
      if (followed && setupFailure !== undefined) {
        // Setup failed on the new tree: nothing of the replay is pushed (the next run follows again).
        checkpoints = prepared;
      } else if (followed) {
        const verified = await performer.reverify(followed);
        followedBase = verified.followedBase;
        checkpoints = verified.checkpoints;
        if (followedBase.push) {
          // A runner whose ledger ends with it pushes now, as it does its checkpoints.
          if (opts.inlinePushes) {
            await workspace.publish?.(followedBase.push);
            delete followedBase.push;
          } else pushes.recorded(followedBase.push.sha);
        }
      }
      event = {
        type: 'start',
        at: clock(),
        checkpoints,
        ...(setupFailure !== undefined ? { setupFailure } : {}),
        ...(finished ? { gatePassed: true } : {}),
        ...(followedBase ? { followedBase } : {}),
      };
    } catch (err) {
      interruptions.throwIfAbandoned();
      log.error({ err }, 'workspace preparation failed');
      return await journal.restFailed('prepare', `internal: cannot prepare the workspace: ${errorText(err)}`);
    }
    while (true) {
      interruptions.throwIfAbandoned();
      if (opts.fence && !(await opts.fence())) throw new GoalAbandonedError(key);
      const decision = decide(view.state, event);
      if (decision.effects.some((e) => e.type === 'finish')) {
        // A goal comes to rest on pushed checkpoints: a push given up meanwhile takes it back first.
        const lost = await performer.pushesLost();
        if (lost) {
          event = lost;
          continue;
        }
      }
      const finishing = await journal.step(decision);
      // A finishing step's report already showed it all (and an update now would re-arm a throttle timer).
      if (!finishing) await opts.forge.update(view.snapshot()).catch((err: unknown) => log.warn({ err }, 'forge.update failed'));
      const next = await performUntilEvent(performer, decision.effects, view.state);
      if (!next) break;
      event = next;
    }
    // The pushes and reports still under way: the run ends when its branch is on the remote.
    await pushesSettled();
    await journal.flushRecords();
    const lost = pushes.takeFailure();
    if (lost) await journal.dropLostCheckpoints(lost, workspace);
    // A pause or stop that was honored stays recorded: it is the human's last word until a newer
    // one (resume, retry, start) clears it, so a run queued before it can never undo it.
    if (!RESTING_STATES.has(view.state.phase)) throw new Error(`loop ended in non-resting state ${view.state.phase}`);
    return journal.finalResult ?? (await view.result(ledger));
  } catch (err) {
    if (err instanceof GoalAbandonedError) throw err;
    interruptions.throwIfAbandoned();
    log.error({ err }, 'internal error in the goal loop');
    return await journal.restAfterError(`internal: ${errorText(err)}`);
  } finally {
    interruptions.dispose();
  }
}

/** Performs a decision's effects in order, up to the first that reports an event (the loop's next). */
async function performUntilEvent(performer: EffectPerformer, effects: readonly Effect[], state: LoopState): Promise<LoopEvent | undefined> {
  for (const effect of effects) {
    const next = await performer.perform(effect, state);
    if (next) return next;
  }
  return undefined;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
