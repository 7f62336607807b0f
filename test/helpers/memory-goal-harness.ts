import { pino } from 'pino';
import { effectiveLimits } from '../../src/goal/limits.js';
import { validateGoalSpec } from '../../src/goal/parse.js';
import type { LoopResult } from '../../src/goal/result.js';
import type { GoalSpec } from '../../src/goal/schema.js';
import { type RunGoalOptions, runGoal } from '../../src/loop/controller.js';
import type { GoalKey } from '../../src/ports/goal-ledger.js';
import { MemoryLedger } from './memory-ledger.js';
import { MemoryRemote, MemoryWorkspace, type MemoryWorkspaceOptions } from './memory-workspace.js';
import { RecordingForge } from './recording-forge.js';
import { type SandboxStep, ScriptedSandbox } from './scripted-sandbox.js';

const silentLogger = pino({ level: 'silent' });

export interface MemoryGoalHarness {
  repo: string;
  ledger: MemoryLedger;
  remote: MemoryRemote;
  forge: RecordingForge;
  sandbox: ScriptedSandbox;
  /** The workspace of the last run (each run gets a fresh one, as after a restart). */
  workspace(): MemoryWorkspace;
  key(goalId: string): GoalKey;
  /** Runs the goal once (a second call is a resume). */
  run(spec: GoalSpec | object, extra?: Partial<RunGoalOptions>, workspace?: Partial<MemoryWorkspaceOptions>): Promise<LoopResult>;
}

/** The fast tier's goal run: runGoal on an in-memory ledger, a memory workspace and remote, and a scripted sandbox. */
export function memoryGoalHarness(opts: { step?: SandboxStep; baseFiles?: Record<string, string> } = {}): MemoryGoalHarness {
  const repo = 'memory/sample';
  const ledger = new MemoryLedger();
  const remote = new MemoryRemote(opts.baseFiles);
  const forge = new RecordingForge();
  let current: MemoryWorkspace | undefined;
  const sandbox = new ScriptedSandbox((cwd) => (current?.dir === cwd ? current : undefined), opts.step);
  return {
    repo,
    ledger,
    remote,
    forge,
    sandbox,
    workspace() {
      if (!current) throw new Error('no run yet');
      return current;
    },
    key: (goalId) => ({ repo, goalId }),
    async run(input, extra = {}, workspaceOptions = {}) {
      const spec = validateGoalSpec(input);
      current = new MemoryWorkspace(remote, { goalId: spec.goal_id, branch: `goal/${spec.goal_id}`, protectedPaths: ['.github/workflows/'], ...workspaceOptions });
      return runGoal({ repo, spec, ledger, workspace: current, sandbox, forge, logger: silentLogger, controlPollMs: 10, ...extra, limits: extra.limits ?? effectiveLimits(undefined, spec.limits) });
    },
  };
}
