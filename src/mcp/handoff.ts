import type { Usage } from '../goal/usage.js';
import type { AgentInput, AgentOutcome, TaskAgent } from '../ports/agent.js';

const NO_USAGE: Usage = { input: 0, output: 0, cache_read: 0, cache_write: 0 };

/** What the external agent reports with `task_complete`. */
export interface ExternalReport {
  summary?: string;
  costUsd?: number;
  usage?: Partial<Usage>;
  /** The agent's own machinery failed (not the task): no verification, counts for the breaker. */
  infraError?: string;
}

/** The attempt the loop is waiting on: handed to the external agent by `next_task`. */
export interface PendingAttempt {
  input: AgentInput;
  /** When the loop reached the agent step of this attempt. */
  since: number;
}

/**
 * The TaskAgent of an externally driven goal. The loop calls `work` when an attempt reaches the
 * agent step; the call waits until the external agent reports with `task_complete` (or the run
 * is interrupted). The loop, not the agent, then verifies and checkpoints.
 *
 * `guard` is asked before an attempt is handed out: a budget lowered through `goal_config`
 * while the run was going stops the goal there (a `budget` outcome, which the loop turns into
 * STOPPED with that reason).
 */
export class Handoff implements TaskAgent {
  readonly name = 'external-mcp';
  private pending: (PendingAttempt & { resolve: (o: AgentOutcome) => void }) | undefined;
  private listeners: Array<() => void> = [];

  constructor(
    private readonly guard: () => Promise<string | undefined>,
    private readonly clock: () => number = Date.now,
  ) {}

  async work(input: AgentInput): Promise<AgentOutcome> {
    const tripped = await this.guard();
    if (tripped) return { ok: false, kind: 'budget', error: tripped, usage: { ...NO_USAGE }, costUsd: 0 };
    return new Promise<AgentOutcome>((resolve) => {
      const onAbort = () => {
        if (this.pending?.input !== input) return;
        this.pending = undefined;
        resolve({ ok: false, kind: 'infra', error: 'the attempt was interrupted', usage: { ...NO_USAGE }, costUsd: 0 });
        this.notify();
      };
      this.pending = {
        input,
        since: this.clock(),
        resolve: (o) => {
          input.signal.removeEventListener('abort', onAbort);
          resolve(o);
        },
      };
      if (input.signal.aborted) return onAbort();
      input.signal.addEventListener('abort', onAbort, { once: true });
      this.notify();
    });
  }

  /** The attempt waiting for the external agent, if any. */
  current(): PendingAttempt | undefined {
    return this.pending ? { input: this.pending.input, since: this.pending.since } : undefined;
  }

  /** Hands the agent's report to the waiting attempt; false when none waits. */
  complete(report: ExternalReport): boolean {
    const p = this.pending;
    if (!p) return false;
    this.pending = undefined;
    const usage = { ...NO_USAGE, ...report.usage };
    const costUsd = report.costUsd ?? 0;
    if (report.infraError !== undefined) p.resolve({ ok: false, kind: 'infra', error: `the external agent reported: ${report.infraError}`, usage, costUsd });
    else p.resolve({ ok: true, usage, costUsd, ...(report.summary ? { summary: report.summary } : {}) });
    return true;
  }

  /** Ends the waiting attempt because a budget ran out: the loop stops the goal with `reason`. */
  stopForBudget(reason: string): boolean {
    const p = this.pending;
    if (!p) return false;
    this.pending = undefined;
    p.resolve({ ok: false, kind: 'budget', error: reason, usage: { ...NO_USAGE }, costUsd: 0 });
    return true;
  }

  /** Resolves at the next change: an attempt arrives, or one goes away. */
  changed(): Promise<void> {
    return new Promise((resolve) => this.listeners.push(resolve));
  }

  /** Wakes everyone waiting in `changed` (also called when a run ends). */
  notify(): void {
    const waiting = this.listeners;
    this.listeners = [];
    for (const l of waiting) l();
  }
}
