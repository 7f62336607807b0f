import type { Logger } from 'pino';
import type { PendingEffect } from '../ports/outbox.js';
import { PushRejectedError, type Workspace } from '../ports/workspace.js';
import { EffectCannotBeDoneError } from './outbox.js';

/** A push that fails for a reason that may pass (the network, the remote's load) is tried this often, then given up. */
export const PUSH_TRIES = 3;
const PUSH_RETRY_MS = [1000, 3000];

/**
 * What the run knows of its checkpoints' pushes, which the outbox performs while the next task
 * runs: the pushes recorded and not done, and the first that was given up (the loop resyncs).
 */
export class PushTracker {
  private readonly waiting = new Set<string>();
  private lost: string | undefined;

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

  /** Performs a `push` effect: the checkpoint (and any committed after it) reaches the goal branch. */
  async perform(workspace: Workspace, e: PendingEffect, logger: Logger, sleep = delay): Promise<void> {
    const p = e.payload as { taskId: string; sha: string; lease: string };
    if (!workspace.publish) return; // its checkpoint pushed as it committed
    for (let tries = 1; ; tries++) {
      try {
        await workspace.publish({ sha: p.sha, lease: p.lease });
        this.waiting.delete(p.sha);
        return;
      } catch (err) {
        const why = err instanceof Error ? err.message : JSON.stringify(err);
        if (!(err instanceof PushRejectedError) && tries < PUSH_TRIES) {
          logger.warn({ err, task: p.taskId, tries }, 'a checkpoint push failed; trying again');
          await sleep(PUSH_RETRY_MS[tries - 1] ?? 3000);
          continue;
        }
        this.waiting.delete(p.sha);
        this.lost ??= `the checkpoint of ${p.taskId} (${p.sha.slice(0, 7)}) could not be pushed: ${why.trim().split('\n').slice(-3).join(' ')}`;
        throw new EffectCannotBeDoneError(this.lost);
      }
    }
  }
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
