import type { GoalKey } from './goal-ledger.js';

/**
 * The outbox: an effect a state change implies (a comment, a label, marking a PR ready) is
 * recorded in the same ledger write as the state change, then performed until it is done. So a
 * process killed between the two leaves the effect pending, and whoever looks next performs it.
 */
export interface EffectInput {
  /** What to do, named by the wiring that performs it (e.g. `finished`, `comment`). */
  kind: string;
  /** JSON: what the performer needs beyond the goal's ledger record. */
  payload: unknown;
}

export interface PendingEffect extends EffectInput {
  id: number;
  key: GoalKey;
  createdAt: string;
  /** Tries so far (claims), this one included once claimed: above 1 means an earlier try may have done it. */
  attempts: number;
  lastError: string | null;
}

export interface Outbox {
  /**
   * Effects not done yet, oldest first: of one goal, or of every goal. `settledForMs` leaves out
   * effects recorded, or last tried, less than that long ago (the sweep's view: orphans only).
   */
  pendingEffects(filter?: { key?: GoalKey; settledForMs?: number }): Promise<PendingEffect[]>;
  /**
   * Claims the effect for one try, for `ttlMs`, and counts the try: returns its number (1 for the
   * first; above 1, an earlier try may have done it). 0 when it is done, or claimed by a try still
   * within its time (so two processes never perform it at once).
   */
  claimEffect(id: number, holder: string, ttlMs: number): Promise<number>;
  /**
   * `holder`'s try goes on (a write waiting for the budget, a slow GitHub): its claim now ends
   * `ttlMs` from now. False when the claim is no longer `holder`'s (another try took it, or the
   * effect is done): the try should not be counted on.
   */
  renewEffectClaim(id: number, holder: string, ttlMs: number): Promise<boolean>;
  completeEffect(id: number): Promise<void>;
  /** `holder`'s try failed: records why, and leaves the effect alone for `retryInMs`. A try no longer holding it changes nothing. */
  failEffect(id: number, holder: string, error: string, retryInMs: number): Promise<void>;
  /**
   * `holder`'s last try failed and the effect is given up: it is no longer pending, and is kept
   * (prune leaves it) as given up, with why, for `givenUpEffects`. A try no longer holding it changes nothing.
   */
  giveUpEffect(id: number, holder: string, error: string): Promise<void>;
  /** Effects given up, oldest first: of one goal, or of every goal. */
  givenUpEffects(filter?: { key?: GoalKey }): Promise<GivenUpEffect[]>;
}

export interface GivenUpEffect extends PendingEffect {
  givenUpAt: string;
}
