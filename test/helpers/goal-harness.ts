import { join } from 'node:path';
import { pino } from 'pino';
import { onTestFinished } from 'vitest';
import { DEFAULT_PROTECTED_PATHS } from '../../src/config/protected-paths.js';
import { createSampleRepo, type SampleRepo } from '../../src/demo/sample-repo.js';
import { effectiveLimits } from '../../src/goal/limits.js';
import { validateGoalSpec } from '../../src/goal/parse.js';
import type { LoopResult } from '../../src/goal/result.js';
import type { GoalSpec } from '../../src/goal/schema.js';
import { SqliteLedger } from '../../src/ledger/sqlite/sqlite-ledger.js';
import { type RunGoalOptions, runGoal } from '../../src/loop/controller.js';
import type { Sandbox } from '../../src/ports/sandbox.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { GitWorkspace, type GitWorkspaceOptions } from '../../src/workspace/git-workspace.js';
import { RecordingForge } from './recording-forge.js';
import { tempDir } from './temp.js';

export const silentLogger = pino({ level: 'silent' });

export interface GoalHarness {
  root: string;
  repo: SampleRepo;
  ledger: SqliteLedger;
  forge: RecordingForge;
  workspaceDir: string;
  /** Runs the goal once (a second call is a resume, with a fresh workspace object); limits default to the spec's over the defaults. */
  run(spec: GoalSpec | object, extra?: Partial<RunGoalOptions>, workspace?: Partial<GitWorkspaceOptions>): Promise<LoopResult>;
}

/** A sample repository, a real SQLite ledger, the real git workspace and a process sandbox. */
export async function goalHarness(opts: { sandbox?: Sandbox; files?: Record<string, string> } = {}): Promise<GoalHarness> {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'), opts.files);
  const ledger = new SqliteLedger(join(root, 'ledger.db'));
  onTestFinished(() => ledger.close());
  const forge = new RecordingForge();
  const workspaceDir = join(root, 'ws', 'goal');
  const sandbox = opts.sandbox ?? new ProcessSandbox();
  const harness: GoalHarness = {
    root,
    repo,
    ledger,
    forge,
    workspaceDir,
    async run(input, extra = {}, workspaceOptions = {}) {
      const spec = 'tasks' in input && 'goal_id' in input && typeof input.goal_id === 'string' ? validateGoalSpec(input) : validateGoalSpec(input, { defaultGoalId: 'test-goal' });
      const workspace = new GitWorkspace({
        remote: repo.bare,
        dir: workspaceDir,
        goalId: spec.goal_id,
        branch: `goal/${spec.goal_id}`,
        protectedPaths: DEFAULT_PROTECTED_PATHS,
        identity: { name: 'goal-loop', email: 'goal-loop@example.com' },
        ...workspaceOptions,
      });
      return runGoal({ repo: repo.bare, spec, ledger, workspace, sandbox, forge, logger: silentLogger, controlPollMs: 50, ...extra, limits: extra.limits ?? effectiveLimits(undefined, spec.limits) });
    },
  };
  return harness;
}
