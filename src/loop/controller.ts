import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { LoopLimits } from '../goal/limits.js';
import type { GoalSpec } from '../goal/schema.js';
import type { TaskAgent } from '../ports/agent.js';
import type { Forge } from '../ports/forge.js';
import type { EffectInput, GoalChange, GoalKey, Ledger, PendingEffect } from '../ports/ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import type { Workspace } from '../ports/workspace.js';
import { EffectPerformer } from './effects.js';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import { RESTING_STATES } from '../goal/states.js';
import { drainEffects, effectsRecorded, performLoopEffect, recordedEffect, type LoopEffect } from './outbox.js';
import { decide, initialState, type Decision, type Effect, type LoopEvent, type LoopState, type OnEscalation } from './transition.js';

export interface RunGoalOptions {
  repo: string;
  spec: GoalSpec;
  ledger: Ledger;
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
  /** Repo config `on_escalation` (default `continue`: independent tasks go on after an escalation). */
  onEscalation?: OnEscalation;
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
  /** Who performs effects (the worker id); default host:pid. */
  effectHolder?: string;
  /** How long a try of an effect keeps others away; a try killed midway is retried after it. Default 30 s. */
  effectClaimMs?: number;
  clock?: () => number;
}

/**
 * Runs one goal to a resting state: decide (pure) -> persist -> perform effects -> repeat.
 * Safe to call again after a crash: git checkpoints say what is done.
 */
export async function runGoal(opts: RunGoalOptions): Promise<LoopResult> {
  const clock = opts.clock ?? Date.now;
  const startedAt = clock();
  const { spec, ledger, workspace } = opts;
  const key: GoalKey = { repo: opts.repo, goalId: spec.goal_id };
  const { limits } = opts;
  const log = opts.logger.child({ goal: spec.goal_id });

  await ledger.upsertGoal(key, { spec, branch: workspace.branch, ...(opts.priority ? { priority: opts.priority } : {}) });
  if (opts.approve?.length) {
    for (const t of spec.tasks) if (opts.approve.includes('all') || opts.approve.includes(t.id)) await ledger.updateTask(key, t.id, { approved: true });
  }
  const goal = (await ledger.getGoal(key))!;
  const records = new Map((await ledger.listTasks(key)).map((r) => [r.taskId, r]));
  let state: LoopState = initialState({
    limits,
    ...(opts.onEscalation ? { onEscalation: opts.onEscalation } : {}),
    startedAtMs: startedAt,
    counters: { iterations: goal.counters.iterations, errors: goal.counters.errors, errorsRecovered: goal.counters.errors_recovered, costUsd: goal.counters.cost_usd },
    tasks: spec.tasks.map((t) => {
      const rec = records.get(t.id);
      return {
        id: t.id,
        title: t.title,
        dependencies: t.dependencies,
        risk: t.risk,
        requiresApproval: t.requires_approval,
        approved: rec?.approved ?? false,
        maxRetries: t.max_retries ?? limits.max_retries,
        status: rec?.status === 'skipped' ? 'skipped' : 'pending',
        attempts: rec?.attempts ?? 0,
      };
    }),
  });

  // Interruptions: a caller's signal, a pause/stop request in the ledger, the wall-clock cap.
  const abort = new AbortController();
  let interruption: { request: 'pause' | 'stop'; reason: string } = { request: 'stop', reason: 'stopped' };
  const interrupt = (request: 'pause' | 'stop', reason: string) => {
    if (abort.signal.aborted) return;
    interruption = { request, reason };
    abort.abort();
  };
  const onCallerAbort = () => interrupt('stop', 'stopped by the user (signal)');
  if (opts.signal?.aborted) onCallerAbort();
  opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const onAbandon = () => interrupt('stop', 'abandoned by this worker');
  if (opts.abandon?.aborted) onAbandon();
  opts.abandon?.addEventListener('abort', onAbandon, { once: true });
  const abandoned = () => {
    if (opts.abandon?.aborted) throw new GoalAbandonedError(key);
  };
  const wall = setTimeout(() => interrupt('stop', `max_wall_minutes reached (${limits.max_wall_minutes})`), limits.max_wall_minutes * 60_000);
  const poll = setInterval(() => {
    ledger
      .getGoal(key)
      .then((g) => {
        if (g?.control) interrupt(g.control, g.control === 'pause' ? 'paused by a human' : 'stopped by a human');
      })
      .catch((err: unknown) => log.warn({ err }, 'cannot read goal control'));
  }, opts.controlPollMs ?? 2000);
  wall.unref();
  poll.unref();

  const taskTimes = new Map<string, { startedAt?: number; endedAt?: number }>();
  const snapshot = (): GoalSnapshot => toSnapshot(state, spec, key, workspace.branch, taskTimes, tokens);
  let tokens = goal.counters.tokens;
  const performer = new EffectPerformer({
    key,
    spec,
    ledger,
    workspace,
    sandbox: opts.sandbox,
    ...(opts.agent ? { agent: opts.agent } : {}),
    gate: opts.gate ?? [],
    logDir: opts.logDir ?? `${workspace.dir}.logs`,
    logger: log,
    signal: abort.signal,
    interruption: () => interruption,
    snapshot,
    clock,
  });

  const perform = opts.performEffect ?? ((e: PendingEffect, s: GoalSnapshot) => performLoopEffect(opts.forge, e, s));
  // The step is written: a failure here (the store, a claim) leaves its effects pending, for the
  // next drain or the sweep; it must not fail the goal.
  const drain = () =>
    drainEffects({
      outbox: ledger,
      key,
      holder: opts.effectHolder ?? `${hostname()}:${process.pid}`,
      claimMs: opts.effectClaimMs ?? 30_000,
      perform: (e) => perform(e, snapshot()),
      logger: log,
      ...(opts.abandon ? { signal: opts.abandon } : {}),
    }).catch((err: unknown) => {
      log.warn({ err }, 'cannot perform pending effects now; they stay pending');
      return 0;
    });
  /** Writes a step and the effects it implies in one transaction, then performs them. */
  const record = async (change: GoalChange) => {
    await ledger.recordChange(key, change);
    if (!change.effects?.length) return;
    effectsRecorded(change.effects);
    await drain();
  };
  /** The resting state, written with its `finished` effect. */
  const rest = async (phase: 'FAILED', event: string, reason: string) => {
    state = { ...state, phase, stopReason: reason };
    const result = await resultOf(state, snapshot, startedAt, clock, ledger, key);
    await record({ transitions: [{ to: phase, event, detail: reason, stopReason: reason }], effects: [loopEffect({ kind: 'finished', payload: { result } })] });
    return result;
  };

  let finalResult: LoopResult | undefined;
  try {
    let event: LoopEvent;
    try {
      // What a run killed earlier left undone (a comment, a PR) is done first; but not its final
      // report, which this run's own end supersedes (the CLI would print a stale summary).
      for (const e of await ledger.pendingEffects({ key }).catch(() => [])) if (e.kind === 'finished') await ledger.completeEffect(e.id);
      await drain();
      const existing = await ledger.getGoal(key);
      if (existing?.control && opts.honorPendingControl) {
        interrupt(existing.control, existing.control === 'pause' ? 'paused by a human' : 'stopped by a human');
      } else if (existing?.control) {
        // A stale request from before this run must not stop it at once.
        await ledger.setControl(key, null);
      }
      const checkpoints = await workspace.prepare();
      const setupFailure = await performer.setup(opts.setup ?? [], opts.setupNetwork ?? false, opts.setupEnv);
      event = { type: 'start', at: clock(), checkpoints, ...(setupFailure !== undefined ? { setupFailure } : {}) };
    } catch (err) {
      abandoned();
      log.error({ err }, 'workspace preparation failed');
      return await rest('FAILED', 'prepare', `internal: cannot prepare the workspace: ${errorText(err)}`);
    }
    for (;;) {
      abandoned(); // nothing this process decides after letting go may reach the ledger
      if (opts.fence && !(await opts.fence())) throw new GoalAbandonedError(key);
      const decision = decide(state, event);
      const before = state;
      state = decision.state;
      const finishing = decision.effects.some((e) => e.type === 'finish');
      if (finishing) finalResult = await resultOf(state, snapshot, startedAt, clock, ledger, key);
      await record(stepChange(before, decision, taskTimes, clock(), outboxEffects(decision.effects, finalResult)));
      log.debug({ state: state.phase, task: state.currentTaskId }, 'transition');
      tokens = (await ledger.getGoal(key))?.counters.tokens ?? tokens;
      // A finishing step's report already showed it all (and an update now would re-arm a throttle timer).
      if (!finishing) await opts.forge.update(snapshot()).catch((err: unknown) => log.warn({ err }, 'forge.update failed'));
      let next: LoopEvent | undefined;
      for (const effect of decision.effects) {
        next = await performer.perform(effect, state);
        if (next) break;
      }
      if (!next) break;
      event = next;
    }
    // A pause or stop that was honored stays recorded: it is the human's last word until a newer
    // one (resume, retry, start) clears it, so a run queued before it can never undo it.
    if (!RESTING_STATES.has(state.phase)) throw new Error(`loop ended in non-resting state ${state.phase}`);
    // The result the final report carried, so the caller and the forge agree.
    return finalResult ?? (await resultOf(state, snapshot, startedAt, clock, ledger, key));
  } catch (err) {
    if (err instanceof GoalAbandonedError) throw err;
    abandoned();
    log.error({ err }, 'internal error in the goal loop');
    const reason = `internal: ${errorText(err)}`;
    try {
      return await rest('FAILED', 'internal_error', reason);
    } catch (again) {
      // The ledger itself is failing: report what is known; the goal's row says where it stopped.
      log.error({ err: again }, 'cannot record the internal error');
      state = { ...state, phase: 'FAILED', stopReason: reason };
      return resultOf(state, snapshot, startedAt, clock, ledger, key).catch(() => fallbackResult(state, key, snapshot, startedAt, clock));
    }
  } finally {
    clearTimeout(wall);
    clearInterval(poll);
    opts.signal?.removeEventListener('abort', onCallerAbort);
    opts.abandon?.removeEventListener('abort', onAbandon);
  }
}

/** runGoal let go of a goal on request; its state in the ledger is the last one it wrote. */
export class GoalAbandonedError extends Error {
  constructor(readonly key: GoalKey) {
    super(`goal ${key.goalId} in ${key.repo} was abandoned by this worker`);
    this.name = 'GoalAbandonedError';
  }
}

/** The decision's transitions, task changes and counter changes, as one ledger write with its effects. */
function stepChange(
  prev: LoopState,
  decision: Decision,
  taskTimes: Map<string, { startedAt?: number; endedAt?: number }>,
  now: number,
  effects: EffectInput[],
): GoalChange {
  const next = decision.state;
  const last = decision.transitions.length - 1;
  const transitions = decision.transitions.map((t, i) => {
    const stopReason = i === last && RESTING_STATES.has(t.to) ? (next.stopReason ?? null) : i === last ? null : undefined;
    return { to: t.to, event: t.event, detail: t.detail ?? null, ...(stopReason !== undefined ? { stopReason } : {}) };
  });
  const before = new Map(prev.tasks.map((t) => [t.id, t]));
  const tasks: NonNullable<GoalChange['tasks']> = [];
  for (const t of next.tasks) {
    const b = before.get(t.id);
    if (b && b.status === t.status && b.attempts === t.attempts && b.checkpointSha === t.checkpointSha && b.lastError === t.lastError) continue;
    tasks.push({ taskId: t.id, patch: { status: t.status, attempts: t.attempts, checkpointSha: t.checkpointSha ?? null, lastError: t.lastError ?? null } });
    const times = taskTimes.get(t.id) ?? {};
    // Elapsed time counts from the task's first attempt in this run to its checkpoint or escalation.
    if (t.status === 'running') {
      times.startedAt ??= now;
      delete times.endedAt;
    } else if (b?.status === 'running' && (t.status === 'done' || t.status === 'escalated')) {
      times.endedAt = now;
    }
    taskTimes.set(t.id, times);
  }
  const dc = {
    iterations: next.counters.iterations - prev.counters.iterations,
    errors: next.counters.errors - prev.counters.errors,
    errors_recovered: next.counters.errorsRecovered - prev.counters.errorsRecovered,
  };
  return {
    transitions,
    tasks,
    ...(dc.iterations || dc.errors || dc.errors_recovered ? { counters: dc } : {}),
    effects,
  };
}

/** The effects a decision implies that reach people (the forge), in the outbox's terms. */
function outboxEffects(effects: readonly Effect[], result: LoopResult | undefined): EffectInput[] {
  const out: EffectInput[] = [];
  for (const e of effects) {
    if (e.type === 'checkpointed') out.push(loopEffect({ kind: 'checkpointed', payload: { taskId: e.taskId, sha: e.sha } }));
    else if (e.type === 'request_approval') out.push(loopEffect({ kind: 'request_approval', payload: { taskIds: e.taskIds } }));
    else if (e.type === 'escalate') out.push(loopEffect({ kind: 'escalate', payload: { escalation: e.escalation } }));
    else if (e.type === 'finish' && result) out.push(loopEffect({ kind: 'finished', payload: { result } }));
  }
  return out;
}

const loopEffect = (e: LoopEffect): EffectInput => recordedEffect(e);

/** The run's result as the ledger knows it now (counters included). */
async function resultOf(
  state: LoopState,
  snapshot: () => GoalSnapshot,
  startedAt: number,
  clock: () => number,
  ledger: Ledger,
  key: GoalKey,
): Promise<LoopResult> {
  const goal = await ledger.getGoal(key);
  return buildResult(state, key, snapshot, startedAt, clock, goal?.counters.tokens, goal?.counters.cost_usd);
}

function fallbackResult(state: LoopState, key: GoalKey, snapshot: () => GoalSnapshot, startedAt: number, clock: () => number): LoopResult {
  return buildResult(state, key, snapshot, startedAt, clock, undefined, undefined);
}

function buildResult(
  state: LoopState,
  key: GoalKey,
  snapshot: () => GoalSnapshot,
  startedAt: number,
  clock: () => number,
  tokens: LoopResult['tokens'] | undefined,
  costUsd: number | undefined,
): LoopResult {
  const done = state.tasks.filter((t) => t.status === 'done' || t.status === 'skipped');
  return {
    goal_id: key.goalId,
    status: state.phase,
    success: state.phase === 'LOOP_COMPLETE',
    tasks_completed: done.length,
    tasks_total: state.tasks.length,
    iterations: state.counters.iterations,
    errors_recovered: state.counters.errorsRecovered,
    tokens: tokens ?? { input: 0, output: 0, cache_read: 0, cache_write: 0 },
    cost_usd: round(costUsd ?? state.counters.costUsd, 6),
    duration_s: round((clock() - startedAt) / 1000, 3),
    stop_reason: state.stopReason ?? null,
    branch: snapshot().branch,
    checkpoints: state.tasks
      .filter((t) => t.checkpointSha)
      .sort((a, b) => (a.checkpointSeq ?? 0) - (b.checkpointSeq ?? 0))
      .map((t) => ({ task_id: t.id, sha: t.checkpointSha! })),
    ...(state.escalation ? { escalation: state.escalation } : {}),
  };
}

function toSnapshot(
  state: LoopState,
  spec: GoalSpec,
  key: GoalKey,
  branch: string,
  times: Map<string, { startedAt?: number; endedAt?: number }>,
  tokens: GoalSnapshot['tokens'],
): GoalSnapshot {
  return {
    goalId: key.goalId,
    objective: spec.objective,
    repo: key.repo,
    branch,
    state: state.phase,
    ...(state.stopReason ? { stopReason: state.stopReason } : {}),
    ...(state.currentTaskId ? { currentTaskId: state.currentTaskId } : {}),
    tasks: state.tasks.map((t) => ({
      id: t.id,
      title: t.title,
      dependencies: t.dependencies,
      status: t.status,
      attempts: t.attempts,
      ...(t.checkpointSha ? { checkpointSha: t.checkpointSha } : {}),
      ...(t.lastError ? { lastError: t.lastError } : {}),
      ...times.get(t.id),
    })),
    iterations: state.counters.iterations,
    tokens,
    costUsd: state.counters.costUsd,
    limits: state.limits,
    startedAt: state.startedAtMs,
    ...(state.escalation ? { escalation: state.escalation } : {}),
  };
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
