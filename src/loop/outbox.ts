import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { crashPoint } from '../common/crash-point.js';
import type { BaseFollowedReport } from '../goal/base-followed.js';
import type { Escalation } from '../goal/escalation.js';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { Forge } from '../ports/forge.js';
import type { EffectInput, GoalKey, Outbox, PendingEffect } from '../ports/ledger.js';

/**
 * The effects the loop's steps imply, as the outbox records them (see ports/outbox.ts). Each is
 * written with the step that implies it and performed through the Forge until one try completes.
 */
export type LoopEffect =
  /** Performed by the run itself (its workspace holds the commit), before the effects that follow it. */
  | { kind: 'push'; payload: { taskId: string; sha: string; lease: string } }
  | { kind: 'checkpointed'; payload: { taskId: string; sha: string } }
  | { kind: 'base_followed'; payload: { report: BaseFollowedReport } }
  | { kind: 'request_approval'; payload: { taskIds: string[] } }
  | { kind: 'escalate'; payload: { escalation: Escalation } }
  | { kind: 'finished'; payload: { result: LoopResult } };

/** The loop's effects performed through the Forge. */
export const LOOP_EFFECT_KINDS: ReadonlySet<string> = new Set(['checkpointed', 'base_followed', 'request_approval', 'escalate', 'finished']);
/** A checkpoint's push: only a run of the goal performs it (see push-effects.ts); a drain elsewhere stops before it. */
export const PUSH_EFFECT = 'push';

/** A try that failed so that no later try can succeed: the effect is given up at once. */
export class EffectCannotBeDoneError extends Error {
  override name = 'EffectCannotBeDoneError';
}

/**
 * An effect as it is recorded: its payload gets a random nonce, which the marker of the comment it
 * posts carries (see `effectOnceId`). Effect ids are small sequential numbers (and a new ledger
 * counts from 1 again): only the nonce tells this effect's comment from any other's.
 */
export function recordedEffect(e: { kind: string; payload: object }): EffectInput {
  return { kind: e.kind, payload: { ...e.payload, nonce: randomBytes(12).toString('base64url') } };
}

/** What makes an effect's comment findable on a retry: `<goal>.<id>.<nonce>` (an effect recorded without a nonce: `<goal>.<id>`). */
export function effectOnceId(e: Pick<PendingEffect, 'id' | 'key' | 'payload'>): string {
  const nonce = (e.payload as { nonce?: unknown } | null)?.nonce;
  return `${e.key.goalId}.${e.id}${typeof nonce === 'string' && /^[\w-]{8,64}$/.test(nonce) ? `.${nonce}` : ''}`;
}

/** Performs one pending effect; throws when it must be tried again. */
export type PerformEffect = (effect: PendingEffect) => Promise<void>;

/** A try that fails waits 2 s, doubling up to 5 min; after this many tries the effect is given up. */
export const MAX_EFFECT_TRIES = 20;
const retryInMs = (tries: number) => Math.min(5 * 60_000, 2000 * 2 ** (tries - 1));

export interface DrainOptions {
  outbox: Outbox;
  key: GoalKey;
  /** Who tries (a worker id): the claim's holder. */
  holder: string;
  /** How long a claim keeps other tries away: a try killed midway is retried after this. */
  claimMs: number;
  perform: PerformEffect;
  logger: Logger;
  /** Stops before the next effect (the process let go of the goal). */
  signal?: AbortSignal;
  /** Stops before an effect this drain may not perform (it and those after it stay pending). */
  stopAt?: (effect: PendingEffect) => boolean;
  /** Performs only these, in order, passing over the others (a lane of its own: a run's pushes). */
  only?: (effect: PendingEffect) => boolean;
  /**
   * An effect was given up (after MAX_EFFECT_TRIES): the wiring may record how to show it (the App
   * records a `sync`, so the status comment says a report could not be delivered). A failure here
   * is logged: the effect is given up all the same, and `goal-loop status` lists it.
   */
  onGivenUp?: (effect: PendingEffect) => Promise<void>;
}

/**
 * Performs a goal's pending effects, oldest first, each under a claim so that no two processes
 * perform one at once. Stops at an effect another process holds, or at one that fails (it waits
 * and is retried, by the next drain or the sweep), so a goal's effects happen in order.
 * Returns how many were done.
 */
export async function drainEffects(o: DrainOptions): Promise<number> {
  let done = 0;
  for (const effect of await o.outbox.pendingEffects({ key: o.key })) {
    if (o.signal?.aborted || o.stopAt?.(effect)) break;
    if (o.only && !o.only(effect)) continue;
    const attempts = await o.outbox.claimEffect(effect.id, o.holder, o.claimMs);
    if (!attempts) break;
    const tried = { ...effect, attempts };
    // The claim lasts as long as the try: a write that waits (for the write budget, say) past the
    // claim's time must not let another try perform the effect meanwhile.
    const beat = setInterval(
      () => {
        o.outbox.renewEffectClaim(effect.id, o.holder, o.claimMs).then(
          (mine) => {
            if (!mine) o.logger.warn({ effect: effect.kind, id: effect.id }, 'an effect claim was lost while its try went on');
          },
          (err: unknown) => o.logger.warn({ err, id: effect.id }, 'an effect claim could not be renewed; retrying'),
        );
      },
      Math.max(50, Math.floor(o.claimMs / 3)),
    );
    beat.unref();
    try {
      await o.perform(tried);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      const hopeless = err instanceof EffectCannotBeDoneError;
      if (hopeless || tried.attempts >= MAX_EFFECT_TRIES) {
        o.logger.error({ err, effect: effect.kind, id: effect.id, tries: tried.attempts }, hopeless ? 'an effect cannot be done and is given up' : 'an effect failed too often and is given up');
        // Kept as given up, not done: `goal-loop status` and the wiring show it.
        await o.outbox.giveUpEffect(effect.id, o.holder, hopeless ? error : `given up after ${tried.attempts} tries: ${error}`);
        await o.onGivenUp?.(tried).catch((e: unknown) => o.logger.warn({ err: e, id: effect.id }, 'cannot record how to show a given-up effect'));
        continue;
      }
      const waitMs = retryInMs(tried.attempts);
      o.logger.warn({ err, effect: effect.kind, id: effect.id, tries: tried.attempts, retryInS: waitMs / 1000 }, 'an effect failed; it will be tried again');
      await o.outbox.failEffect(effect.id, o.holder, error, waitMs);
      break;
    } finally {
      clearInterval(beat);
    }
    crashPoint(`effect-performed:${effect.kind}`);
    await o.outbox.completeEffect(effect.id);
    done += 1;
  }
  return done;
}

/** After a write that recorded `effects`, before any is performed: a crash-test boundary per kind. */
export function effectsRecorded(effects: readonly EffectInput[]): void {
  for (const e of effects) crashPoint(`effects-recorded:${e.kind}`);
}

/** Performs a loop effect through the forge; `snapshot` is the goal as it is now. */
export async function performLoopEffect(forge: Forge, e: PendingEffect, snapshot: GoalSnapshot): Promise<void> {
  const once = { id: effectOnceId(e), retry: e.attempts > 1 };
  const effect = { kind: e.kind, payload: e.payload } as LoopEffect;
  switch (effect.kind) {
    case 'checkpointed':
      return forge.checkpointed(snapshot, effect.payload, once);
    case 'base_followed':
      return forge.baseFollowed?.(snapshot, effect.payload.report, once);
    case 'request_approval':
      return forge.requestApproval(snapshot, effect.payload.taskIds, once);
    case 'escalate':
      return forge.escalate(snapshot, effect.payload.escalation, once);
    case 'finished':
      return forge.finished(effect.payload.result, snapshot, once);
    default:
      throw new Error(`unknown effect kind ${e.kind}`);
  }
}
