import type { Logger } from 'pino';
import type { ApplicationFunction, Probot } from 'probot';
import type { RepoConfig } from '../config/repo-config.js';
import { RESTING_STATES } from '../loop/states.js';
import type { Ledger } from '../ports/ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import { goalLoopApp } from './app.js';
import { EventProcessor } from './event-processor.js';
import type { GoalEvent } from './events.js';
import type { Octokit } from './github-forge.js';
import { readGitHubGoal } from './github-goal.js';
import { GoalScheduler } from './goal-scheduler.js';
import { workGoal, type WorkGoalDeps } from './work-goal.js';

export interface RuntimeOptions {
  probot: Probot;
  ledger: Ledger;
  logger: Logger;
  workspaceRoot: string;
  sandboxFor: (config: RepoConfig) => Promise<Sandbox>;
  concurrency?: number;
  minUpdateIntervalMs?: number;
  controlPollMs?: number;
  /** The Claude agent and planner (see claude-hooks.ts); without them goals use run steps only. */
  claude?: Pick<WorkGoalDeps, 'agentFor' | 'planner'>;
}

/** The GitHub App's parts, wired: thin handlers -> event processor -> goal scheduler -> loop. */
export interface GoalLoopRuntime {
  appFn: ApplicationFunction;
  processor: EventProcessor;
  scheduler: GoalScheduler;
  /** Schedules every goal that was mid-run when the process stopped. */
  resumeInterrupted(): Promise<number>;
  /** Resolves when every accepted event is handled and no goal is running. */
  idle(): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

export function createRuntime(opts: RuntimeOptions): GoalLoopRuntime {
  const auth = async (installationId: number) => (await opts.probot.auth(installationId)) as unknown as Octokit;
  const scheduler = new GoalScheduler(
    (key, mode) =>
      workGoal(
        {
          ledger: opts.ledger,
          logger: opts.logger,
          auth,
          workspaceRoot: opts.workspaceRoot,
          sandboxFor: opts.sandboxFor,
          ...(opts.minUpdateIntervalMs !== undefined ? { minUpdateIntervalMs: opts.minUpdateIntervalMs } : {}),
          ...(opts.controlPollMs !== undefined ? { controlPollMs: opts.controlPollMs } : {}),
          ...opts.claude,
        },
        key,
        mode,
      ),
    opts.concurrency ?? 2,
    opts.logger,
  );
  const processor = new EventProcessor({
    ledger: opts.ledger,
    logger: opts.logger,
    auth,
    schedule: (key, mode, priority) => scheduler.schedule(key, mode, priority),
    isRunning: (key) => scheduler.isRunning(key),
    cancel: (key) => scheduler.cancel(key),
  });
  let inflight = Promise.resolve();
  const intake = async (event: GoalEvent) => {
    // Record and enqueue only: a redelivery is dropped; the work happens after the 200.
    if (!(await opts.ledger.recordDelivery(event.deliveryId))) return;
    inflight = processor.handle(event);
  };
  return {
    appFn: goalLoopApp(intake),
    processor,
    scheduler,
    async resumeInterrupted() {
      let n = 0;
      for (const goal of await opts.ledger.listGoals()) {
        if (RESTING_STATES.has(goal.state) || !readGitHubGoal(goal.meta)) continue;
        scheduler.schedule({ repo: goal.repo, goalId: goal.goalId }, 'run', goal.priority);
        n += 1;
      }
      return n;
    },
    async idle() {
      for (;;) {
        const seen = inflight;
        await seen;
        await scheduler.idle();
        if (seen === inflight) return;
      }
    },
    close: (graceMs = 10_000) => scheduler.close(graceMs),
  };
}
