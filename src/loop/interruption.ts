import type { Logger } from 'pino';
import type { ControlRequest, GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import { GoalAbandonedError } from './goal-abandoned.js';

/** Why a run was interrupted: a pause or a stop, and the words the result and the forge show. */
export interface Interruption {
  request: ControlRequest;
  reason: string;
}

export interface InterruptionSources {
  key: GoalKey;
  /** Read every `pollMs` for a human's pause/stop request. */
  ledger: Pick<GoalLedger, 'getGoal' | 'setControl'>;
  pollMs: number;
  /** The wall-clock cap (`max_wall_minutes`). */
  wallMinutes: number;
  /** The caller's stop (e.g. SIGINT). */
  signal?: AbortSignal;
  /** This process lets go of the goal (see RunGoalOptions.abandon). */
  abandon?: AbortSignal;
  logger: Logger;
}

/**
 * What may interrupt a run: the caller's signal, abandon, the wall clock, and a pause/stop request
 * in the ledger. The first one wins: `signal` fires, and `why()` says which it was.
 */
export class Interruptions {
  private readonly abort = new AbortController();
  private interruption: Interruption = { request: 'stop', reason: 'stopped' };
  private readonly wall: NodeJS.Timeout;
  private readonly poll: NodeJS.Timeout;
  private readonly onCallerAbort = () => this.interrupt('stop', 'stopped by the user (signal)');
  private readonly onAbandon = () => this.interrupt('stop', 'abandoned by this worker');

  constructor(private readonly s: InterruptionSources) {
    if (s.signal?.aborted) this.onCallerAbort();
    s.signal?.addEventListener('abort', this.onCallerAbort, { once: true });
    if (s.abandon?.aborted) this.onAbandon();
    s.abandon?.addEventListener('abort', this.onAbandon, { once: true });
    this.wall = setTimeout(() => this.interrupt('stop', `max_wall_minutes reached (${s.wallMinutes})`), s.wallMinutes * 60_000);
    this.poll = setInterval(() => {
      s.ledger
        .getGoal(s.key)
        .then((g) => {
          if (g?.control) this.byHuman(g.control);
        })
        .catch((err: unknown) => s.logger.warn({ err }, 'cannot read goal control'));
    }, s.pollMs);
    this.wall.unref();
    this.poll.unref();
  }

  /** Fires at the first interruption: what the run is doing stops. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  why(): Interruption {
    return this.interruption;
  }

  /**
   * A pause/stop request already in the ledger when the run starts: acted on when `honor` (the App's
   * worker), else cleared, since a fresh run is itself the human's newest word.
   */
  async pendingRequest(honor: boolean): Promise<void> {
    const existing = await this.s.ledger.getGoal(this.s.key);
    if (existing?.control && honor) this.byHuman(existing.control);
    else if (existing?.control) await this.s.ledger.setControl(this.s.key, null);
  }

  /** Nothing this process decides after letting go may reach the ledger. */
  throwIfAbandoned(): void {
    if (this.s.abandon?.aborted) throw new GoalAbandonedError(this.s.key);
  }

  dispose(): void {
    clearTimeout(this.wall);
    clearInterval(this.poll);
    this.s.signal?.removeEventListener('abort', this.onCallerAbort);
    this.s.abandon?.removeEventListener('abort', this.onAbandon);
  }

  private byHuman(control: ControlRequest): void {
    this.interrupt(control, control === 'pause' ? 'paused by a human' : 'stopped by a human');
  }

  private interrupt(request: ControlRequest, reason: string): void {
    if (this.abort.signal.aborted) return;
    this.interruption = { request, reason };
    this.abort.abort();
  }
}
