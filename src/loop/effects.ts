import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Evidence, VerificationPolicy } from '../goal/evidence.js';
import { failureSignature } from '../goal/failure-signature.js';
import { guessInstallCommand, isMissingDependency, missingSetupHint, withTurnLimitNote } from '../goal/failure-summary.js';
import type { GoalSnapshot, SetupProgress } from '../goal/result.js';
import type { GoalSpec, TaskSpec } from '../goal/schema.js';
import { setupFailureHint } from '../goal/setup-hint.js';
import { protectedScriptNames, protectedTestPaths } from '../goal/verification-policy.js';
import type { TaskAgent } from '../ports/agent.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { CommandResult, Sandbox } from '../ports/sandbox.js';
import { CheckpointRefusedError, type Workspace } from '../ports/workspace.js';
import { AttemptRecorder, commandOutcome } from './attempt-recorder.js';
import { BaselineRunner } from './baseline.js';
import { gateChecksKey, rememberGatePassed } from './finished-tip.js';
import { type Effect, FINAL_GATE_TASK, type LoopEvent, type LoopState, SETUP_TASK } from './transition.js';

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
  clock?: () => number;
}

/** Repo config `setup_stall_s` when none is given. */
export const DEFAULT_SETUP_STALL_S = 60;

/** How setup runs beyond its commands (repo config `setup_timeout_s`, `setup_stall_s`), and who watches it. */
export interface SetupOptions {
  /** Seconds each command may run; default: the task timeout. */
  timeoutS?: number;
  /** Seconds with no output, no file written and no CPU used before a command is killed as stalled; default 60. */
  stallS?: number;
  /** Proxy and CA variables set on the host that `setup_env` does not name (for the hint). */
  unpassedHostNames?: readonly string[];
  /** Told as setup starts, moves to its next command, and ends. */
  progress?: (p: SetupProgress) => void;
}

/** Performs the controller's effects through the ports, and reports what happened as an event. */
export class EffectPerformer {
  private readonly clock: () => number;
  /** Whether `setup()` ran any command in this run (else a command not found gets the missing-setup hint). */
  private setupRan = false;
  /** The attempt record: what each attempt did, in the ledger as it goes. */
  private readonly record: AttemptRecorder;
  /** Attempts whose agent stopped at its turn limit (task#attempt → the limit). */
  private readonly turnLimited = new Map<string, number>();

  /** Runs (or reuses) each task's baseline. */
  private readonly baseline: BaselineRunner;
  private readonly policy: VerificationPolicy;

  constructor(private readonly deps: EffectDeps) {
    this.clock = deps.clock ?? Date.now;
    this.record = new AttemptRecorder(deps.ledger, deps.key, deps.logger, this.clock);
    this.policy = deps.verification;
    this.baseline = new BaselineRunner({
      ...deps,
      policy: this.policy,
      record: this.record,
      clock: this.clock,
      run: (task, attempt) => this.command(task.verification, task, attempt, 'baseline'),
      interrupted: (taskId, attempt) => this.interrupted(taskId, attempt),
    });
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
      case 'escalate':
      case 'request_approval':
      case 'finish':
        // What people are told: recorded in the outbox with the step, and performed from there (outbox.ts).
        return undefined;
    }
  }

  /**
   * Runs the repo's setup commands once per run; returns the failure, if any. Each command may
   * run `timeoutS` (default: the task timeout) and is killed as stalled after `stallS` with no
   * output, no file written and no CPU used. `progress` is told as setup starts, moves to its
   * next command and ends (the live display).
   */
  async setup(commands: readonly string[], network: boolean, passEnv: Record<string, string> = {}, opts: SetupOptions = {}): Promise<string | undefined> {
    const identity = { commands, network };
    if (commands.length === 0) return this.keepSetupOutput(identity, false, undefined);
    const startedAt = this.clock();
    const show = (p: Omit<SetupProgress, 'startedAt'>) => opts.progress?.({ startedAt, ...p });
    // Setup runs once per run: each run's is its own attempt in the record (`logs` calls it "run N").
    const run = await this.nextRunAttempt(SETUP_TASK);
    // Begun before anything: its end's duration covers the restore and every command.
    this.record.begin(SETUP_TASK, run);
    show({ status: 'running', ...(commands[0] ? { command: commands[0] } : {}) });
    // The same setup on the same inputs ran before on this repository: its output is put back.
    const restored = await this.deps.workspace.restoreSetup?.(identity).catch((err: unknown) => {
      this.deps.logger.warn({ err }, 'cannot read the setup cache; setup runs');
      return false;
    });
    if (restored) {
      this.setupRan = true;
      this.deps.logger.info('setup output restored from the setup cache; setup did not run');
    }
    const timeoutS = opts.timeoutS ?? this.timeoutS();
    const stallS = opts.stallS ?? DEFAULT_SETUP_STALL_S;
    for (const [i, command] of (restored ? [] : commands).entries()) {
      this.setupRan = true;
      if (i > 0) show({ status: 'running', command });
      let result: CommandResult;
      try {
        result = await this.deps.sandbox.run({
          command,
          cwd: this.deps.workspace.dir,
          env: { GOAL_ID: this.deps.spec.goal_id, GOAL_TASK_ID: SETUP_TASK, GOAL_ATTEMPT: '1' },
          timeoutMs: timeoutS * 1000,
          stallMs: stallS * 1000,
          network,
          passEnv,
          logPath: join(this.deps.logDir, `setup-${i + 1}.log`),
          signal: this.deps.signal,
        });
      } catch (err) {
        // The sandbox itself failed (the run fails as its preparation did): the record and the display say so.
        await this.record.end(SETUP_TASK, run, 'infra', `sandbox failed: ${message(err)}`);
        show({ status: 'failed', command, durationMs: this.clock() - startedAt, failure: `sandbox failed: ${message(err)}` });
        throw err;
      }
      if (result.aborted) {
        await this.record.end(SETUP_TASK, run, 'interrupted', 'the run was interrupted');
        show({ status: 'failed', command, durationMs: this.clock() - startedAt, failure: 'interrupted' });
        return undefined;
      }
      const passed = result.exitCode === 0;
      const hint = passed
        ? undefined
        : setupFailureHint(result.output, {
            command,
            network,
            passedNames: Object.keys(passEnv),
            unpassedHostNames: opts.unpassedHostNames ?? [],
            timedOut: result.timedOut,
            stalled: result.stalled === true,
          });
      const output = passed ? result.output : describeFailure(`setup \`${command}\``, result, timeoutS, hint, stallS);
      await this.deps.ledger.recordAttempt(this.deps.key, attemptRecord(SETUP_TASK, 1, 'setup', result, output, passed));
      await this.record.step(SETUP_TASK, run, command, result);
      if (!passed) {
        await this.record.end(SETUP_TASK, run, commandOutcome(result), output);
        show({ status: 'failed', command, durationMs: this.clock() - startedAt, failure: setupHeadline(command, result, timeoutS, stallS) });
        return output;
      }
    }
    const failure = await this.keepSetupOutput(identity, restored === true, run);
    const last = restored ? {} : { command: commands.at(-1)! };
    show({ status: failure ? 'failed' : 'done', ...last, durationMs: this.clock() - startedAt, ...(restored ? { restored: true } : {}), ...(failure ? { failure } : {}) });
    if (!failure) await this.record.end(SETUP_TASK, run, 'passed', restored ? 'setup output restored from the setup cache' : 'setup done');
    return failure;
  }

  /** Marks what setup left out of every checkpoint and keeps it in the setup cache; a refusal is setup's failure. */
  private async keepSetupOutput(identity: { commands: readonly string[]; network: boolean }, restored: boolean, run: number | undefined): Promise<string | undefined> {
    try {
      const output = await this.deps.workspace.preserveIgnored();
      if (output.length > 0) {
        // Not gitignored, so named: no checkpoint takes them unless a task changes one.
        this.deps.logger.info({ paths: output.slice(0, 50), count: output.length }, 'setup output left out of every checkpoint');
      }
      if (identity.commands.length > 0 && !restored) {
        await this.deps.workspace.saveSetup?.(identity).catch((err: unknown) => this.deps.logger.warn({ err }, 'cannot keep setup output in the setup cache'));
      }
    } catch (err) {
      // What setup left (e.g. a nested repository) that no checkpoint may take: setup failed.
      if (err instanceof CheckpointRefusedError) {
        if (run !== undefined) await this.record.end(SETUP_TASK, run, 'refused', err.message);
        return `setup: ${err.message}`;
      }
      throw err;
    }
    return undefined;
  }

  private async execute(taskId: string, attempt: number, state: LoopState, previousFailure?: string): Promise<LoopEvent> {
    const { deps } = this;
    const task = this.task(taskId);
    if (deps.signal.aborted) return this.interrupted();
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
        await deps.ledger.recordAttempt(deps.key, attemptRecord(taskId, attempt, 'run', result, error));
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
    await this.deps.ledger.recordAttempt(this.deps.key, attemptRecord(taskId, attempt, 'verify', result, output, passed));
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
    try {
      const testPaths = protectedTestPaths(this.policy, task);
      const protectedScripts = protectedScriptNames(task);
      const cp = await this.deps.workspace.checkpoint({
        goalId: this.deps.spec.goal_id,
        taskId,
        title: task.title,
        attempt,
        evidence,
        ...(testPaths.length > 0 ? { testPaths } : {}),
        ...(protectedScripts.length > 0 ? { protectedScripts } : {}),
      });
      await this.record.checkpoint(taskId, attempt, cp.sha, cp.stat, evidence);
      await this.record.end(taskId, attempt, 'passed', cp.stat ? `${cp.stat.files} file(s) changed, +${cp.stat.insertions} -${cp.stat.deletions}` : 'checkpointed');
      return { type: 'checkpointed', at: this.clock(), sha: cp.sha };
    } catch (err) {
      if (err instanceof CheckpointRefusedError) {
        const reason = this.stoppedShort(taskId, attempt, err.message);
        await this.deps.ledger.recordAttempt(this.deps.key, { taskId, attempt, phase: 'checkpoint', passed: false, exitCode: null, output: reason, durationMs: 0 });
        await this.record.end(taskId, attempt, 'refused', reason);
        return { type: 'checkpoint_refused', at: this.clock(), reason };
      }
      await this.record.end(taskId, attempt, 'infra', `checkpoint failed: ${message(err)}`);
      return { type: 'infra_error', at: this.clock(), error: `checkpoint failed: ${message(err)}` };
    }
  }

  private async finalGate(): Promise<LoopEvent> {
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
      await this.deps.ledger.recordAttempt(this.deps.key, attemptRecord(FINAL_GATE_TASK, 1, 'gate', result, output, passed));
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
    if (this.setupRan || !isMissingDependency(result) || result.timedOut) return undefined;
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

/** What failed and how, its output, and last (so every tail-excerpt keeps it) a hint, if any. */
export function describeFailure(what: string, result: CommandResult, timeoutS: number, hint?: string, stallS?: number): string {
  const status = result.stalled
    ? `stalled (no output, no file written and no CPU used for ${stallS ?? '?'}s) and was killed`
    : result.timedOut
      ? `timed out after ${timeoutS}s and was killed`
      : result.exitCode === null
        ? `was killed by ${result.signal ?? 'a signal'}`
        : `exited with code ${result.exitCode}`;
  const out = result.output.trim();
  return `${what} ${status}${out ? `:\n${out}` : ' (no output)'}${hint ? `\n\n${hint}` : ''}`;
}

/** One line for the live display: the command and how it ended. */
function setupHeadline(command: string, result: CommandResult, timeoutS: number, stallS: number): string {
  if (result.stalled) return `\`${command}\` stalled: no output, no file written, no CPU for ${stallS}s`;
  if (result.timedOut) return `\`${command}\` timed out after ${timeoutS}s`;
  return `\`${command}\` ${result.exitCode === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited with code ${result.exitCode}`}`;
}

function attemptRecord(taskId: string, attempt: number, phase: string, r: CommandResult, output: string, passed = false) {
  return { taskId, attempt, phase, passed, exitCode: r.exitCode, output, ...(r.logPath ? { logPath: r.logPath } : {}), durationMs: r.durationMs };
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
