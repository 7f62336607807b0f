import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Evidence, VerificationPolicy } from '../goal/evidence.js';
import { failureSignature } from '../goal/failure-signature.js';
import { guessInstallCommand, isMissingDependency, missingSetupHint, withTurnLimitNote } from '../goal/failure-summary.js';
import type { GoalSnapshot } from '../goal/result.js';
import type { GoalSpec, TaskSpec } from '../goal/schema.js';
import { protectedScriptNames, protectedTestPaths } from '../goal/verification-policy.js';
import type { TaskAgent } from '../ports/agent.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { CommandResult, Sandbox } from '../ports/sandbox.js';
import { type BaseFollowed, type Checkpoint, CheckpointRefusedError, type Workspace } from '../ports/workspace.js';
import { AttemptRecorder, commandOutcome } from './attempt-recorder.js';
import { BaselineRunner } from './baseline.js';
import { attemptRecord, describeFailure, message } from './command-report.js';
import { gateChecksKey, rememberGatePassed } from './finished-tip.js';
import { reverifyReplayed } from './follow-base.js';
import type { FollowedBase } from './loop-model.js';
import type { PushTracker } from './push-effects.js';
import { type SetupOptions, SetupRunner } from './setup-runner.js';
import { type Effect, FINAL_GATE_TASK, type LoopEvent, type LoopState } from './transition.js';

export interface EffectDeps {
  key: GoalKey;
  spec: GoalSpec;
  ledger: GoalLedger & AttemptLog;
  workspace: Workspace;
  sandbox: Sandbox;
  agent?: TaskAgent;
  /** Repo-level commands the final gate runs after the acceptance checks. */
  gate: string[];
  /** Where full command logs go (the scratchpad). */
  logDir: string;
  logger: Logger;
  signal: AbortSignal;
  /** Why the signal fired: a pause, a stop, or a safeguard. */
  interruption: () => { request: 'pause' | 'stop'; reason: string };
  snapshot: () => GoalSnapshot;
  /** Red before green, protected tests (DESIGN.md §10): the run's policy. */
  verification: VerificationPolicy;
  /** The checkpoints' pushes, which the outbox performs while the next task runs. */
  pushes?: { tracker: PushTracker; settled: () => Promise<void> };
  clock?: () => number;
}

/** Performs the controller's effects through the ports, and reports what happened as an event. */
export class EffectPerformer {
  private readonly clock: () => number;
  /** The repo's setup, once per run. */
  private readonly setupRunner: SetupRunner;
  /** The attempt record: what each attempt did, in the ledger as it goes. */
  private readonly record: AttemptRecorder;
  /** Attempts whose agent stopped at its turn limit (task#attempt → the limit). */
  private readonly turnLimited = new Map<string, number>();

  /** Runs (or reuses) each task's baseline. */
  private readonly baseline: BaselineRunner;
  private readonly policy: VerificationPolicy;

  constructor(private readonly deps: EffectDeps) {
    this.clock = deps.clock ?? Date.now;
    // The attempt record of a step's effects goes in the step's own transaction (StepJournal).
    this.record = new AttemptRecorder(deps.ledger, deps.key, deps.logger, this.clock, true);
    this.policy = deps.verification;
    this.baseline = new BaselineRunner({
      ...deps,
      policy: this.policy,
      record: this.record,
      clock: this.clock,
      run: (task, attempt) => this.command(task.verification, task, attempt, 'baseline'),
      interrupted: (taskId, attempt) => this.interrupted(taskId, attempt),
    });
    this.setupRunner = new SetupRunner({
      ...deps,
      record: this.record,
      clock: this.clock,
      timeoutS: () => this.timeoutS(),
      nextRunAttempt: (taskId) => this.nextRunAttempt(taskId),
    });
  }

  /** The attempt record the effects made since the last step: written with the next one. */
  takeRecords(): ReturnType<AttemptRecorder['take']> {
    return this.record.take();
  }

  /** Returns the event the effect produced, or undefined for fire-and-forget effects. */
  async perform(effect: Effect, state: LoopState): Promise<LoopEvent | undefined> {
    switch (effect.type) {
      case 'execute':
        return this.execute(effect.taskId, effect.attempt, state, effect.previousFailure);
      case 'baseline':
        return this.baseline.run(effect.taskId, effect.attempt);
      case 'verify':
        return this.verify(effect.taskId, effect.attempt);
      case 'checkpoint':
        return this.checkpoint(effect.taskId, effect.attempt, effect.evidence);
      case 'rollback':
        try {
          await this.deps.workspace.rollback();
          return undefined;
        } catch (err) {
          if (effect.bestEffort) {
            // The goal is coming to rest; the next run's prepare resets the workspace anyway.
            this.deps.logger.warn({ err }, 'rollback failed');
            return undefined;
          }
          return { type: 'infra_error', at: this.clock(), error: `rollback failed: ${message(err)}` };
        }
      case 'final_gate':
        return this.finalGate();
      case 'checkpointed':
      case 'base_followed':
      case 'escalate':
      case 'request_approval':
      case 'finish':
        // What people are told: recorded in the outbox with the step, and performed from there (outbox.ts).
        return undefined;
    }
  }

  /** After the goal branch followed its base, and setup ran: the replayed checkpoints verified again (see follow-base.ts). */
  reverify(followed: BaseFollowed): Promise<{ followedBase: FollowedBase; checkpoints: Checkpoint[] }> {
    const { workspace } = this.deps;
    return reverifyReplayed(followed, {
      spec: this.deps.spec,
      verify: (taskId, command, attempt) => this.run(command, { GOAL_TASK_ID: taskId, GOAL_ATTEMPT: String(attempt) }, `follow-base-${taskId}`),
      dropFrom: (sha) => {
        if (!workspace.dropReplayedFrom) throw new Error('this workspace cannot take replayed commits off its branch');
        return workspace.dropReplayedFrom(sha);
      },
      timeoutS: this.timeoutS(),
      signal: this.deps.signal,
    });
  }

  /** Runs the repo's setup commands once per run (see SetupRunner); returns the failure, if any. */
  async setup(commands: readonly string[], network: boolean, passEnv: Record<string, string> = {}, opts: SetupOptions = {}): Promise<string | undefined> {
    return this.setupRunner.run(commands, network, passEnv, opts);
  }

  private async execute(taskId: string, attempt: number, state: LoopState, previousFailure?: string): Promise<LoopEvent> {
    const { deps } = this;
    const task = this.task(taskId);
    if (deps.signal.aborted) return this.interrupted();
    const lost = await this.pushLost();
    if (lost) return lost;
    this.record.begin(taskId, attempt);
    try {
      await deps.workspace.sync();
    } catch (err) {
      return { type: 'infra_error', at: this.clock(), error: `cannot sync the goal branch: ${message(err)}` };
    }
    for (const [i, command] of task.run.entries()) {
      let result: CommandResult;
      try {
        result = await this.command(command, task, attempt, `run-${i + 1}`);
      } catch (err) {
        await this.record.end(taskId, attempt, 'infra', `sandbox failed: ${message(err)}`);
        return { type: 'executed', at: this.clock(), ok: false, kind: 'infra', error: `sandbox failed: ${message(err)}` };
      }
      if (result.aborted) return this.interrupted(taskId, attempt);
      await this.record.step(taskId, attempt, command, result);
      if (result.exitCode !== 0) {
        const error = describeFailure(`run step \`${command}\``, result, state.limits.task_timeout_s, this.hintFor(result));
        await this.record.result(attemptRecord(taskId, attempt, 'run', result, error));
        await this.record.end(taskId, attempt, commandOutcome(result), error);
        return { type: 'executed', at: this.clock(), ok: false, kind: 'task', error };
      }
    }
    if (!deps.agent) return { type: 'executed', at: this.clock(), ok: true };
    const done = state.tasks.filter((t) => t.status === 'done' && t.checkpointSha).map((t) => ({ taskId: t.id, sha: t.checkpointSha! }));
    try {
      const outcome = await deps.agent.work({
        goal: deps.spec,
        task,
        attempt,
        ...(previousFailure !== undefined ? { previousFailure } : {}),
        testPaths: protectedTestPaths(this.policy, task),
        protectedScripts: protectedScriptNames(task),
        workspaceDir: deps.workspace.dir,
        done,
        budgetUsd: Math.max(0, state.limits.cost_cap_usd - state.counters.costUsd),
        signal: deps.signal,
        onTurn: (turn) => this.record.turn(taskId, attempt, turn),
      });
      await deps.ledger.addCounters(deps.key, { tokens: outcome.usage, cost_usd: outcome.costUsd });
      this.record.spent(taskId, attempt, outcome.usage, outcome.costUsd);
      if (deps.signal.aborted) return this.interrupted(taskId, attempt);
      if (outcome.ok) {
        if (outcome.turnLimit !== undefined) this.turnLimited.set(`${taskId}#${attempt}`, outcome.turnLimit);
        return { type: 'executed', at: this.clock(), ok: true, costUsd: outcome.costUsd };
      }
      await this.record.end(taskId, attempt, outcome.kind, outcome.error);
      return { type: 'executed', at: this.clock(), ok: false, kind: outcome.kind, error: outcome.error, costUsd: outcome.costUsd };
    } catch (err) {
      if (deps.signal.aborted) return this.interrupted(taskId, attempt);
      await this.record.end(taskId, attempt, 'infra', `agent failed: ${message(err)}`);
      return { type: 'executed', at: this.clock(), ok: false, kind: 'infra', error: `agent failed: ${message(err)}` };
    }
  }

  private async verify(taskId: string, attempt: number): Promise<LoopEvent> {
    const task = this.task(taskId);
    let result: CommandResult;
    try {
      await this.restoreTestFiles(task);
      result = await this.command(task.verification, task, attempt, 'verify');
    } catch (err) {
      await this.record.end(taskId, attempt, 'infra', `sandbox failed: ${message(err)}`);
      return { type: 'infra_error', at: this.clock(), error: `sandbox failed: ${message(err)}` };
    }
    if (result.aborted) return this.interrupted(taskId, attempt);
    const passed = result.exitCode === 0;
    const output = passed ? result.output : this.stoppedShort(taskId, attempt, describeFailure(`verification \`${task.verification}\``, result, this.timeoutS(), this.hintFor(result)));
    await this.record.result(attemptRecord(taskId, attempt, 'verify', result, output, passed));
    await this.record.verify(taskId, attempt, task.verification, result);
    if (passed) return { type: 'verified', at: this.clock(), passed, output };
    await this.record.end(taskId, attempt, this.turnLimited.has(`${taskId}#${attempt}`) ? 'turn_limit' : commandOutcome(result), output);
    return { type: 'verified', at: this.clock(), passed, output, signature: failureSignature(result.output, { workspaceDir: this.deps.workspace.dir }) };
  }

  /** `verify_with_base_tests`: the test files as they were before the task, over its tree. */
  private async restoreTestFiles(task: TaskSpec): Promise<void> {
    if (!this.policy.verifyWithBaseTests || !this.deps.workspace.restoreTestFiles) return;
    const globs = protectedTestPaths(this.policy, task);
    if (globs.length === 0) return;
    const restored = await this.deps.workspace.restoreTestFiles(globs);
    if (restored.length > 0)
      this.deps.logger.info({ task: task.id, restored: restored.slice(0, 20), count: restored.length }, 'test files put back as they were before the task, for its verification');
  }

  private async checkpoint(taskId: string, attempt: number, evidence: Evidence): Promise<LoopEvent> {
    const task = this.task(taskId);
    const lost = await this.pushLost();
    if (lost) {
      await this.record.end(taskId, attempt, 'infra', lost.type === 'unpushed' ? lost.error : 'an earlier checkpoint could not be pushed');
      return lost;
    }
    try {
      const testPaths = protectedTestPaths(this.policy, task);
      const protectedScripts = protectedScriptNames(task);
      const { workspace } = this.deps;
      // With `publish`, the push is the outbox's, performed while the next task runs.
      const commit = workspace.commit && workspace.publish && this.deps.pushes ? workspace.commit.bind(workspace) : workspace.checkpoint.bind(workspace);
      const cp = await commit({
        goalId: this.deps.spec.goal_id,
        taskId,
        title: task.title,
        attempt,
        evidence,
        ...(testPaths.length > 0 ? { testPaths } : {}),
        ...(protectedScripts.length > 0 ? { protectedScripts } : {}),
      });
      if (cp.push) this.deps.pushes?.tracker.recorded(cp.push.sha);
      await this.record.checkpoint(taskId, attempt, cp.sha, cp.stat, evidence);
      await this.record.end(taskId, attempt, 'passed', cp.stat ? `${cp.stat.files} file(s) changed, +${cp.stat.insertions} -${cp.stat.deletions}` : 'checkpointed');
      return { type: 'checkpointed', at: this.clock(), sha: cp.sha, ...(cp.push ? { push: cp.push } : {}) };
    } catch (err) {
      if (err instanceof CheckpointRefusedError) {
        const reason = this.stoppedShort(taskId, attempt, err.message);
        await this.record.result({ taskId, attempt, phase: 'checkpoint', passed: false, exitCode: null, output: reason, durationMs: 0 });
        await this.record.end(taskId, attempt, 'refused', reason);
        return { type: 'checkpoint_refused', at: this.clock(), reason };
      }
      await this.record.end(taskId, attempt, 'infra', `checkpoint failed: ${message(err)}`);
      return { type: 'infra_error', at: this.clock(), error: `checkpoint failed: ${message(err)}` };
    }
  }

  private async finalGate(): Promise<LoopEvent> {
    // The gate judges the branch as pushed: every checkpoint's push is done first.
    const lost = await this.pushesLost();
    if (lost) return lost;
    const checks = [
      ...this.deps.spec.acceptance_criteria.filter((c) => c.check).map((c) => ({ label: c.description, command: c.check! })),
      ...this.deps.gate.map((command) => ({ label: `gate: ${command}`, command })),
    ];
    const failures: string[] = [];
    const run = checks.length > 0 ? await this.nextRunAttempt(FINAL_GATE_TASK) : 1;
    if (checks.length > 0) this.record.begin(FINAL_GATE_TASK, run);
    for (const [i, check] of checks.entries()) {
      let result: CommandResult;
      try {
        result = await this.run(check.command, { GOAL_TASK_ID: FINAL_GATE_TASK, GOAL_ATTEMPT: '1' }, `final-gate-${i + 1}`);
      } catch (err) {
        await this.record.end(FINAL_GATE_TASK, run, 'infra', `sandbox failed: ${message(err)}`);
        return { type: 'infra_error', at: this.clock(), error: `sandbox failed: ${message(err)}` };
      }
      if (result.aborted) return this.interrupted(FINAL_GATE_TASK, run);
      const passed = result.exitCode === 0;
      const output = passed ? result.output : describeFailure(`${check.label} (\`${check.command}\`)`, result, this.timeoutS(), this.hintFor(result));
      await this.record.result(attemptRecord(FINAL_GATE_TASK, 1, 'gate', result, output, passed));
      await this.record.step(FINAL_GATE_TASK, run, check.command, result);
      if (!passed) failures.push(output);
    }
    if (checks.length > 0) await this.record.end(FINAL_GATE_TASK, run, failures.length === 0 ? 'passed' : 'failed', failures[0] ?? 'all checks passed');
    if (failures.length === 0) {
      await rememberGatePassed(this.deps.ledger, this.deps.key, this.deps.workspace, gateChecksKey(this.deps.spec, this.deps.gate)).catch((err: unknown) =>
        this.deps.logger.warn({ err }, 'cannot remember that the final gate passed; a rerun runs it again'),
      );
    }
    return { type: 'gate_done', at: this.clock(), passed: failures.length === 0, output: failures.join('\n\n') || 'all checks passed' };
  }

  /** Once every push recorded so far was tried: the event that takes the loop back to the remote's branch, when one was given up. */
  async pushesLost(): Promise<LoopEvent | undefined> {
    await this.deps.pushes?.settled();
    return this.pushLost();
  }

  /**
   * A checkpoint's push was given up (someone else pushed to the goal branch, say): once the
   * pushes under way are done, the workspace goes back to the remote's tip, and the tasks whose
   * checkpoints did not reach it are to do again.
   */
  private async pushLost(): Promise<LoopEvent | undefined> {
    const pushes = this.deps.pushes;
    if (!pushes) return undefined;
    let error = pushes.tracker.takeFailure();
    if (error === undefined) return undefined;
    await pushes.settled();
    pushes.tracker.takeFailure();
    if (!this.deps.workspace.resync) return { type: 'infra_error', at: this.clock(), error };
    try {
      const checkpoints = await this.deps.workspace.resync();
      this.deps.logger.warn({ error, onRemote: checkpoints.length }, 'a checkpoint push was rejected; back to the goal branch as the remote has it');
      return { type: 'unpushed', at: this.clock(), error, checkpoints: checkpoints.map((c) => ({ taskId: c.taskId, sha: c.sha })) };
    } catch (err) {
      error = `${error}; and the goal branch cannot be read back: ${message(err)}`;
      return { type: 'infra_error', at: this.clock(), error };
    }
  }

  private command(command: string, task: TaskSpec, attempt: number, label: string): Promise<CommandResult> {
    return this.run(command, { GOAL_TASK_ID: task.id, GOAL_ATTEMPT: String(attempt) }, `${task.id}-a${attempt}-${label}`);
  }

  private run(command: string, env: Record<string, string>, logName: string): Promise<CommandResult> {
    return this.deps.sandbox.run({
      command,
      cwd: this.deps.workspace.dir,
      env: { GOAL_ID: this.deps.spec.goal_id, ...env },
      timeoutMs: this.timeoutS() * 1000,
      logPath: join(this.deps.logDir, `${logName.replace(/[^A-Za-z0-9._-]/g, '_')}.log`),
      signal: this.deps.signal,
    });
  }

  /**
   * A command not found (exit 126/127) or a missing import while no setup ran: the dependencies were never installed.
   * The install to suggest comes from the lockfiles at the workspace's top level (fixed names).
   */
  private hintFor(result: CommandResult): string | undefined {
    if (this.setupRunner.ran || !isMissingDependency(result) || result.timedOut) return undefined;
    return missingSetupHint(guessInstallCommand((lockfile) => existsSync(join(this.deps.workspace.dir, lockfile))));
  }

  /** A failure of an attempt whose agent stopped at its turn limit says so first (the next attempt reads it). */
  private stoppedShort(taskId: string, attempt: number, failure: string): string {
    const limit = this.turnLimited.get(`${taskId}#${attempt}`);
    return limit === undefined ? failure : withTurnLimitNote(failure, attempt, limit);
  }

  private timeoutS(): number {
    return this.deps.snapshot().limits.task_timeout_s;
  }

  private task(taskId: string): TaskSpec {
    const task = this.deps.spec.tasks.find((t) => t.id === taskId);
    if (!task) throw new Error(`unknown task ${taskId}`);
    return task;
  }

  private async interrupted(taskId?: string, attempt?: number): Promise<LoopEvent> {
    const why = this.deps.interruption();
    if (taskId !== undefined && attempt !== undefined) await this.record.end(taskId, attempt, 'interrupted', `${why.request}: ${why.reason}`);
    return { type: 'interrupted', at: this.clock(), ...why };
  }

  /** Setup and the final gate run once per run: each run is the next attempt in their record. */
  private async nextRunAttempt(taskId: string): Promise<number> {
    const entries = await this.deps.ledger.listAttemptEntries(this.deps.key, { taskId }).catch(() => []);
    return entries.reduce((n, e) => Math.max(n, e.attempt), 0) + 1;
  }
}
