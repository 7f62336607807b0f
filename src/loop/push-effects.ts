import type { Logger } from 'pino';
import type { PendingEffect } from '../ports/outbox.js';
import { PushRejectedError, type Workspace } from '../ports/workspace.js';
import { EffectCannotBeDoneError } from './outbox.js';

/**
 * In a run, a push that fails for a reason that may pass (the network, the remote's load) is tried
 * again after these waits (about 100 s in all) before it is given up and the loop goes back to the
 * remote's branch: the loop goes on meanwhile, and the final gate waits for it.
 */
const PUSH_RETRY_MS = [1000, 3000, 10_000, 30_000, 60_000];

/**
 * What the run knows of its checkpoints' pushes, which the outbox performs while the next task
 * runs: the pushes recorded and not done, those given up, and the first given up since the loop
 * last looked (the loop then resyncs).
 */
export class PushTracker {
  private readonly waiting = new Set<string>();
  private readonly givenUp = new Set<string>();
  private lost: string | undefined;

  constructor(private readonly sleep: (ms: number) => Promise<void> = delay) {}

  recorded(sha: string): void {
    this.waiting.add(sha);
  }

  /** Checkpoints recorded whose push is not done: not on GitHub yet. */
  get unpushed(): ReadonlySet<string> {
    return this.waiting;
  }

  /** Why a push was given up since the last call, once. */
  takeFailure(): string | undefined {
    const lost = this.lost;
    this.lost = undefined;
    return lost;
  }

  /** A report of a checkpoint whose push was given up: it names a commit GitHub will never have. */
  reportsLostCheckpoint(e: PendingEffect): boolean {
    const sha = (e.payload as { sha?: unknown } | null)?.sha;
    return e.kind === 'checkpointed' && typeof sha === 'string' && this.givenUp.has(sha);
  }

  /**
   * Performs a `push` effect: the checkpoint (and any committed after it) reaches the goal branch.
   * `patient` (a run): a failure that may pass is tried again here, then given up; otherwise (a
   * turn, the sweep) it is left to the outbox's own retries.
   */
  async perform(workspace: Workspace, e: PendingEffect, logger: Logger, patient = true): Promise<void> {
    const p = e.payload as { taskId: string; sha: string; lease: string };
    if (!workspace.publish) return; // its checkpoint pushed as it committed
    for (let tries = 1; ; tries++) {
      try {
        await workspace.publish({ sha: p.sha, lease: p.lease });
        this.waiting.delete(p.sha);
        return;
      } catch (err) {
        const why = err instanceof Error ? err.message : JSON.stringify(err);
        const wait = PUSH_RETRY_MS[tries - 1];
        if (!(err instanceof PushRejectedError)) {
          if (!patient) throw err;
          if (wait !== undefined) {
            logger.warn({ err, task: p.taskId, tries, retryInS: wait / 1000 }, 'a checkpoint push failed; trying again');
            await this.sleep(wait);
            continue;
          }
        }
        this.waiting.delete(p.sha);
        this.givenUp.add(p.sha);
        this.lost ??= `the checkpoint of ${p.taskId} (${p.sha.slice(0, 7)}) could not be pushed: ${why.trim().split('\n').slice(-3).join(' ')}`;
        throw new EffectCannotBeDoneError(this.lost);
      }
    }
  }
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
