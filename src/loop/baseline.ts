import type { Logger } from 'pino';
import type { VerificationPolicy } from '../goal/evidence.js';
import type { GoalSpec, TaskSpec } from '../goal/schema.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { GoalKey } from '../ports/goal-ledger.js';
import type { CommandResult } from '../ports/sandbox.js';
import type { Workspace } from '../ports/workspace.js';
import type { AttemptRecorder } from './attempt-recorder.js';
import type { LoopEvent } from './loop-model.js';

export interface BaselineDeps {
  key: GoalKey;
  spec: GoalSpec;
  ledger: AttemptLog;
  workspace: Workspace;
  logger: Logger;
  policy: VerificationPolicy;
  record: AttemptRecorder;
  clock: () => number;
  /** Runs the task's verification in the sandbox, as its attempt `attempt` would. */
  run: (task: TaskSpec, attempt: number) => Promise<CommandResult>;
  interrupted: (taskId: string, attempt: number) => Promise<LoopEvent>;
}

interface Outcome {
  passed: boolean;
  exitCode: number | null;
  durationMs: number;
  timedOut: boolean;
  output: string;
}

/**
 * Red before green (DESIGN.md §10): a task's verification on the tree without its change. The
 * same command on the same tree (another task's, or an earlier run's) is not run again.
 */
export class BaselineRunner {
  /** Results by tree and command: this run's, and (read once, at the first baseline) earlier runs'. */
  private readonly seen = new Map<string, Outcome>();
  private earlierRead = false;

  constructor(private readonly deps: BaselineDeps) {}

  async run(taskId: string, attempt: number): Promise<LoopEvent> {
    const { deps } = this;
    const task = deps.spec.tasks.find((t) => t.id === taskId);
    if (!task) throw new Error(`unknown task ${taskId}`);
    try {
      // The tree the task will start from: a human's push since the last checkpoint is in it
      // (a baseline of the tree before would claim the human's fix as the task's red -> green).
      await deps.workspace.sync();
    } catch (err) {
      return { type: 'infra_error', at: deps.clock(), error: `cannot sync the goal branch: ${err instanceof Error ? err.message : JSON.stringify(err)}` };
    }
    const tree = await deps.workspace.treeKey?.().catch(() => undefined);
    const memo = tree ? `${tree}\0${task.verification}` : undefined;
    if (memo) await this.readEarlierRuns();
    let outcome = memo ? this.seen.get(memo) : undefined;
    const reused = outcome !== undefined;
    if (!outcome) {
      let result: CommandResult;
      try {
        result = await deps.run(task, attempt);
        // What the verification wrote (a report, a snapshot) is not the task's change.
        if (!result.aborted && (await deps.workspace.changedFiles()).length > 0) await deps.workspace.rollback();
      } catch (err) {
        return { type: 'infra_error', at: deps.clock(), error: `baseline failed: ${err instanceof Error ? err.message : JSON.stringify(err)}` };
      }
      if (result.aborted) return deps.interrupted(taskId, attempt);
      outcome = { passed: result.exitCode === 0, exitCode: result.exitCode, durationMs: Math.round(result.durationMs), timedOut: result.timedOut, output: result.output };
    }
    if (memo) this.seen.set(memo, outcome);
    const expect = task.expect ?? 'red';
    const policy = deps.policy.baseline === 'require_red' ? 'require_red' : 'warn';
    const { output, ...result } = outcome;
    await deps.record.baseline(taskId, attempt, { ...result, expect, policy, ...(reused ? { reused } : {}), ...(tree ? { tree } : {}) }, task.verification, output);
    if (!outcome.passed || expect === 'green') return { type: 'baseline_done', at: deps.clock(), passed: outcome.passed, output };
    deps.logger.warn({ task: taskId, verification: task.verification }, 'the verification passes before the task ran: it proves nothing about the task');
    const why = passesBefore(task, policy);
    if (policy === 'require_red') await deps.record.end(taskId, attempt, 'refused', why);
    return { type: 'baseline_done', at: deps.clock(), passed: true, output: `${why}\n\n${output.trim() ? `Its output before the task:\n${output.trim()}` : '(no output)'}` };
  }

  /** The baselines in the goal's record (earlier runs'), once per run; the newest of a tree and command wins. */
  private async readEarlierRuns(): Promise<void> {
    if (this.earlierRead) return;
    this.earlierRead = true;
    const entries = await this.deps.ledger.listAttemptEntries(this.deps.key).catch(() => []);
    for (const { entry: b } of entries) {
      if (b.kind === 'baseline' && b.tree) this.seen.set(`${b.tree}\0${b.command}`, { passed: b.passed, exitCode: b.exitCode, durationMs: b.durationMs, timedOut: b.timedOut, output: b.tail });
    }
  }
}

/** What a verification that passes before its task means, and how to fix the spec. */
function passesBefore(task: TaskSpec, policy: 'warn' | 'require_red'): string {
  const head = `no red before green: task ${task.id}'s verification \`${task.verification}\` already passes before the task made any change, so its passing cannot show the task did anything.`;
  if (policy === 'warn') return `${head} (verification_baseline: warn: the task runs; its checkpoint says green->green.)`;
  return `${head} Fix the spec: make the verification check what this task adds (for example a test that fails today), or say \`expect: green\` if the task must only keep it passing (a refactor); then retry the task.`;
}
