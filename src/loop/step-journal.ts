import type { Logger } from 'pino';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { GoalChange, GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { Outbox, PendingEffect } from '../ports/outbox.js';
import type { Workspace } from '../ports/workspace.js';
import { drainEffects, effectsRecorded, PUSH_EFFECT } from './outbox.js';
import type { RunView } from './run-view.js';
import { loopEffect, outboxEffects, stepChange } from './step-change.js';
import type { Decision } from './transition.js';

export interface StepJournalOptions {
  ledger: GoalLedger & Outbox;
  key: GoalKey;
  view: RunView;
  /** Performs one outbox effect of this goal, given the goal as it is now. */
  perform: (effect: PendingEffect, snapshot: GoalSnapshot) => Promise<void>;
  /** Who performs effects (the claim's holder), and how long a try keeps others away. */
  holder: string;
  claimMs: number;
  /** The process let go of the goal: no effect is started after it. */
  abandon?: AbortSignal;
  /** What the step's effects recorded (attempt results and entries): written in the step's transaction. */
  records?: () => Pick<GoalChange, 'attempts' | 'attemptEntries'>;
  logger: Logger;
  clock: () => number;
}

/**
 * Writes the run's steps: each decision as one ledger write with the effects it implies, which are
 * then performed from the outbox (drained), and, when the loop cannot go on, the resting state.
 */
export class StepJournal {
  /** The result the finishing step's report carried, so the caller and the forge agree. */
  finalResult: LoopResult | undefined;
  /** Drains run one after another; the last one, which may still be going on. */
  private draining: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: StepJournalOptions) {}

  /**
   * What a run killed earlier left undone (a comment, a PR) is done first; but not its final
   * report, which this run's own end supersedes (the CLI would print a stale summary).
   */
  async settleLeftovers(): Promise<void> {
    for (const e of await this.o.ledger.pendingEffects({ key: this.o.key }).catch(() => [])) if (e.kind === 'finished') await this.o.ledger.completeEffect(e.id);
    await this.drain();
    // A checkpoint's push that another process is performing (the sweep) lands before the run
    // reads the branch: else the run would do its task again, and its own push be refused.
    for (let waited = 0; waited < this.o.claimMs && (await this.pendingPushes()) > 0; waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
      await this.drain();
    }
  }

  private async pendingPushes(): Promise<number> {
    return (await this.o.ledger.pendingEffects({ key: this.o.key }).catch(() => [])).filter((e) => e.kind === PUSH_EFFECT).length;
  }

  /** Resolves once every effect written so far was tried (the run waits for this before it returns). */
  async settled(): Promise<void> {
    await this.draining;
  }

  /**
   * The last step's own push was given up after the goal came to rest: the workspace goes back to
   * the remote's branch, and the tasks whose checkpoints are not on it are recorded as not done
   * (the next run does them again). The run's result says so.
   */
  async dropLostCheckpoints(error: string, workspace: Pick<Workspace, 'resync'>): Promise<void> {
    const { view, ledger, key } = this.o;
    this.o.logger.warn({ error }, 'a checkpoint push was refused after the goal came to rest; its task is not done');
    const onRemote = new Map(((await workspace.resync?.().catch(() => undefined)) ?? []).map((c) => [c.taskId, c.sha]));
    const lostTasks = view.state.tasks.filter((t) => t.status === 'done' && t.checkpointSha && onRemote.get(t.id) !== t.checkpointSha);
    if (lostTasks.length === 0) return;
    view.state = {
      ...view.state,
      tasks: view.state.tasks.map((t) => (lostTasks.includes(t) ? { ...t, status: 'pending' as const, checkpointSha: undefined, checkpointSeq: undefined, lastError: error } : t)),
    };
    await ledger.recordChange(key, { tasks: lostTasks.map((t) => ({ taskId: t.id, patch: { status: 'pending', checkpointSha: null, lastError: error } })) });
    this.finalResult = await view.result(ledger);
  }

  /** What the effects recorded after the last step (a run that ends without one more step). */
  async flushRecords(): Promise<void> {
    const left = this.o.records?.();
    if (left && (left.attempts?.length || left.attemptEntries?.length)) await this.o.ledger.recordChange(this.o.key, left);
  }

  /** Applies a decision to the view and writes it; true when it finishes the run. */
  async step(decision: Decision): Promise<boolean> {
    const { view, ledger, key } = this.o;
    const before = view.state;
    view.state = decision.state;
    const finishing = decision.effects.some((e) => e.type === 'finish');
    if (finishing) this.finalResult = await view.result(ledger);
    await this.record(stepChange(before, decision, view.taskTimes, this.o.clock(), outboxEffects(decision.effects, this.finalResult)));
    this.o.logger.debug({ state: view.state.phase, task: view.state.currentTaskId }, 'transition');
    view.tokens = (await ledger.getGoal(key))?.counters.tokens ?? view.tokens;
    return finishing;
  }

  /** The goal rests in FAILED (`event` says where it failed), written with its `finished` effect. */
  async restFailed(event: string, reason: string): Promise<LoopResult> {
    const { view } = this.o;
    view.state = { ...view.state, phase: 'FAILED', stopReason: reason };
    const result = await view.result(this.o.ledger);
    await this.record({ transitions: [{ to: 'FAILED', event, detail: reason, stopReason: reason }], effects: [loopEffect({ kind: 'finished', payload: { result } })] });
    return result;
  }

  /** After an internal error: rest in FAILED; if even the ledger fails, report what is known (the goal's row says where it stopped). */
  async restAfterError(reason: string): Promise<LoopResult> {
    try {
      return await this.restFailed('internal_error', reason);
    } catch (again) {
      this.o.logger.error({ err: again }, 'cannot record the internal error');
      const { view } = this.o;
      view.state = { ...view.state, phase: 'FAILED', stopReason: reason };
      return view.result(this.o.ledger).catch(() => view.fallbackResult());
    }
  }

  /**
   * Writes a step and the effects it implies in one transaction, then performs them: a
   * checkpoint's push, and what follows it, while the loop goes on (the next task runs); any
   * other effect before the loop goes on.
   */
  private async record(step: GoalChange): Promise<void> {
    const change = { ...step, ...this.o.records?.() };
    await this.o.ledger.recordChange(this.o.key, change);
    if (!change.effects?.length) return;
    effectsRecorded(change.effects);
    const drained = this.drain();
    if (!change.effects.some((e) => e.kind === PUSH_EFFECT)) await drained;
  }

  /**
   * The step is written: a failure here (the store, a claim) leaves its effects pending, for the
   * next drain or the sweep; it must not fail the goal.
   */
  private drain(): Promise<number> {
    const run = this.draining.then(() => this.drainNow());
    this.draining = run;
    return run;
  }

  /**
   * The pushes first, in a lane of their own (a report that fails and waits must not hold a push
   * back), then every effect in order (a report never goes ahead of its push).
   */
  private async drainNow(): Promise<number> {
    return (await this.drainOnce((e) => e.kind === PUSH_EFFECT)) + (await this.drainOnce());
  }

  private drainOnce(only?: (e: PendingEffect) => boolean): Promise<number> {
    const { o } = this;
    return drainEffects({
      outbox: o.ledger,
      key: o.key,
      holder: o.holder,
      claimMs: o.claimMs,
      perform: (e) => o.perform(e, o.view.snapshot()),
      logger: o.logger,
      ...(o.abandon ? { signal: o.abandon } : {}),
      ...(only ? { only } : {}),
    }).catch((err: unknown) => {
      o.logger.warn({ err }, 'cannot perform pending effects now; they stay pending');
      return 0;
    });
  }
}
