import { join } from 'node:path';
import type { Logger } from 'pino';
import type { SetupProgress } from '../goal/result.js';
import type { GoalSpec } from '../goal/schema.js';
import { DEFAULT_SETUP_STALL_S, setupFailureHint } from '../goal/setup-hint.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { CommandResult, Sandbox } from '../ports/sandbox.js';
import { CheckpointRefusedError, type PackageStoreGrant, type Workspace } from '../ports/workspace.js';
import { type AttemptRecorder, commandOutcome } from './attempt-recorder.js';
import { attemptRecord, describeFailure, message } from './command-report.js';
import { SETUP_TASK } from './transition.js';

/** How setup runs beyond its commands (repo config `setup_timeout_s`, `setup_stall_s`), and who watches it. */
export interface SetupOptions {
  /** Seconds each command may run; default: the task timeout. */
  timeoutS?: number;
  /** Seconds with no output, no file written and no CPU used before a command is killed as stalled; default DEFAULT_SETUP_STALL_S. */
  stallS?: number;
  /** Proxy and CA variables set on the host that `setup_env` does not name (for the hint). */
  unpassedHostNames?: readonly string[];
  /** Told as setup starts, moves to its next command, and ends. */
  progress?: (p: SetupProgress) => void;
}

export interface SetupRunnerDeps {
  key: GoalKey;
  spec: GoalSpec;
  ledger: GoalLedger & AttemptLog;
  workspace: Workspace;
  sandbox: Sandbox;
  logDir: string;
  logger: Logger;
  signal: AbortSignal;
  record: AttemptRecorder;
  clock: () => number;
  /** The task timeout: each setup command's default bound. */
  timeoutS: () => number;
  /** Setup runs once per run: each run is the next attempt in its record. */
  nextRunAttempt: (taskId: string) => Promise<number>;
}

/**
 * The repo's setup, once per run: its output put back from the setup cache, else its commands
 * run in the jail (with the network when the config allows it, and the repository's package
 * store), then what it left marked as setup's and kept for the next goal.
 */
export class SetupRunner {
  /** Whether any setup command ran in this run (else a command not found gets the missing-setup hint). */
  ran = false;

  constructor(private readonly d: SetupRunnerDeps) {}

  /**
   * Runs the repo's setup commands once per run; returns the failure, if any. Each command may
   * run `timeoutS` (default: the task timeout) and is killed as stalled after `stallS` with no
   * output, no file written and no CPU used. `progress` is told as setup starts, moves to its
   * next command and ends (the live display).
   */
  async run(commands: readonly string[], network: boolean, passEnv: Record<string, string> = {}, opts: SetupOptions = {}): Promise<string | undefined> {
    const identity = { commands, network };
    if (commands.length === 0) return this.keepSetupOutput(identity, false, undefined);
    const startedAt = this.d.clock();
    const show = (p: Omit<SetupProgress, 'startedAt'>) => opts.progress?.({ startedAt, ...p });
    // Setup runs once per run: each run's is its own attempt in the record (`logs` calls it "run N").
    const run = await this.d.nextRunAttempt(SETUP_TASK);
    // Begun before anything: its end's duration covers the restore and every command.
    this.d.record.begin(SETUP_TASK, run);
    show({ status: 'running', ...(commands[0] ? { command: commands[0] } : {}) });
    // The same setup on the same inputs ran before on this repository: its output is put back.
    const restored = await this.d.workspace.restoreSetup?.(identity).catch((err: unknown) => {
      this.d.logger.warn({ err }, 'cannot read the setup cache; setup runs');
      return false;
    });
    if (restored) {
      this.ran = true;
      this.d.logger.info('setup output restored from the setup cache; setup did not run');
    }
    const timeoutS = opts.timeoutS ?? this.d.timeoutS();
    const stallS = opts.stallS ?? DEFAULT_SETUP_STALL_S;
    const store = restored ? undefined : await this.claimPackageStore();
    try {
      const failed = await this.runSetupCommands(restored ? [] : commands, { network, passEnv, opts, timeoutS, stallS, run, startedAt, show, store });
      if (failed !== false) return failed;
    } finally {
      await store?.release().catch((err: unknown) => this.d.logger.warn({ err }, 'cannot release the package store'));
    }
    const failure = await this.keepSetupOutput(identity, restored === true, run);
    const last = restored ? {} : { command: commands.at(-1)! };
    show({ status: failure ? 'failed' : 'done', ...last, durationMs: this.d.clock() - startedAt, ...(restored ? { restored: true } : {}), ...(failure ? { failure } : {}) });
    if (!failure) await this.d.record.end(SETUP_TASK, run, 'passed', restored ? 'setup output restored from the setup cache' : 'setup done');
    return failure;
  }

  /** The package store setup's commands get (none when the workspace has none to give). */
  private async claimPackageStore(): Promise<PackageStoreGrant | undefined> {
    const store = await this.d.workspace.packageStore?.().catch((err: unknown) => {
      // Setup still runs: its package managers then keep their stores where they would.
      this.d.logger.warn({ err }, 'cannot prepare a package store for setup');
      return undefined;
    });
    if (store) {
      this.d.logger.info(
        { managers: store.managers, store: store.dir, kept: store.kept },
        store.kept ? "setup uses the repository's package store" : 'setup uses a throwaway package store (setup on a goal branch, or the store is in use)',
      );
    }
    return store;
  }

  /** Setup's commands in order; the failure (undefined: interrupted), or false when all passed. */
  private async runSetupCommands(
    commands: readonly string[],
    c: {
      network: boolean;
      passEnv: Record<string, string>;
      opts: SetupOptions;
      timeoutS: number;
      stallS: number;
      run: number;
      startedAt: number;
      show: (p: Omit<SetupProgress, 'startedAt'>) => void;
      store: PackageStoreGrant | undefined;
    },
  ): Promise<string | undefined | false> {
    const { network, passEnv, opts, timeoutS, stallS, run, startedAt, show, store } = c;
    for (const [i, command] of commands.entries()) {
      this.ran = true;
      if (i > 0) show({ status: 'running', command });
      let result: CommandResult;
      try {
        result = await this.d.sandbox.run({
          command,
          cwd: this.d.workspace.dir,
          env: { GOAL_ID: this.d.spec.goal_id, GOAL_TASK_ID: SETUP_TASK, GOAL_ATTEMPT: '1' },
          timeoutMs: timeoutS * 1000,
          stallMs: stallS * 1000,
          network,
          passEnv,
          ...(store ? { packageStore: { dir: store.dir, env: store.env } } : {}),
          logPath: join(this.d.logDir, `setup-${i + 1}.log`),
          signal: this.d.signal,
        });
      } catch (err) {
        // The sandbox itself failed (the run fails as its preparation did): the record and the display say so.
        await this.d.record.end(SETUP_TASK, run, 'infra', `sandbox failed: ${message(err)}`);
        show({ status: 'failed', command, durationMs: this.d.clock() - startedAt, failure: `sandbox failed: ${message(err)}` });
        throw err;
      }
      if (result.aborted) {
        await this.d.record.end(SETUP_TASK, run, 'interrupted', 'the run was interrupted');
        show({ status: 'failed', command, durationMs: this.d.clock() - startedAt, failure: 'interrupted' });
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
      await this.d.record.result(attemptRecord(SETUP_TASK, 1, 'setup', result, output, passed));
      await this.d.record.step(SETUP_TASK, run, command, result);
      if (!passed) {
        await this.d.record.end(SETUP_TASK, run, commandOutcome(result), output);
        show({ status: 'failed', command, durationMs: this.d.clock() - startedAt, failure: setupHeadline(command, result, timeoutS, stallS) });
        return output;
      }
    }
    return false;
  }

  /** Marks what setup left out of every checkpoint and keeps it in the setup cache; a refusal is setup's failure. */
  private async keepSetupOutput(identity: { commands: readonly string[]; network: boolean }, restored: boolean, run: number | undefined): Promise<string | undefined> {
    try {
      const output = await this.d.workspace.preserveIgnored();
      if (output.length > 0) {
        // Not gitignored, so named: no checkpoint takes them unless a task changes one.
        this.d.logger.info({ paths: output.slice(0, 50), count: output.length }, 'setup output left out of every checkpoint');
      }
      if (identity.commands.length > 0 && !restored) {
        await this.d.workspace.saveSetup?.(identity).catch((err: unknown) => this.d.logger.warn({ err }, 'cannot keep setup output in the setup cache'));
      }
    } catch (err) {
      // What setup left (e.g. a nested repository) that no checkpoint may take: setup failed.
      if (err instanceof CheckpointRefusedError) {
        if (run !== undefined) await this.d.record.end(SETUP_TASK, run, 'refused', err.message);
        return `setup: ${err.message}`;
      }
      throw err;
    }
    return undefined;
  }
}

/** One line for the live display: the command and how it ended. */
function setupHeadline(command: string, result: CommandResult, timeoutS: number, stallS: number): string {
  if (result.stalled) return `\`${command}\` stalled: no output, no file written, no CPU for ${stallS}s`;
  if (result.timedOut) return `\`${command}\` timed out after ${timeoutS}s`;
  return `\`${command}\` ${result.exitCode === null ? `was killed by ${result.signal ?? 'a signal'}` : `exited with code ${result.exitCode}`}`;
}
