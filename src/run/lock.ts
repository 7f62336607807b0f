import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { InputError } from '../common/errors.js';
import { makeDirs } from '../common/make-dirs.js';
import { FileLock, isAlive, STALE_TAKEOVER_MS } from '../workspace/file-lock.js';

export class LockedError extends Error {
  override name = 'LockedError';
  /** The lockfile names no live process: one that died as it took the lock over, or before writing its pid. It clears by itself. */
  readonly holderGone: boolean;

  constructor(message: string, holderGone: boolean) {
    super(message);
    this.holderGone = holderGone;
  }
}

/**
 * An exclusive lock on one goal's workspace, so two runs never work the same clone: the
 * workspace's FileLock (a lockfile of `pid host`, a dead holder's taken over by exactly one
 * process), taken without waiting. Returns its release.
 */
export function tryLock(path: string): () => void {
  try {
    makeDirs(dirname(path));
  } catch (err) {
    throw new InputError(`cannot create the workspace directory ${dirname(path)} (GOAL_LOOP_WORKSPACES): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const lock = new FileLock(path);
  if (lock.tryAcquireSync()) return () => lock.releaseSync();
  const pid = lock.holderPid();
  if (pid === undefined || (lock.holderOnThisHost() && !isAlive(pid))) {
    throw new LockedError(
      `a goal-loop that ended as it took this goal's lock left it half taken over${pid === undefined ? '' : ` (pid ${pid}, gone)`}; it clears within ${STALE_TAKEOVER_MS / 1000} s, try again. Lock: ${path}`,
      true,
    );
  }
  throw new LockedError(`another goal-loop (pid ${pid}) is working this goal; lock: ${path}`, false);
}

/**
 * `tryLock`, waiting out a lock whose holder is gone but which cannot be taken over yet: a run
 * killed within the few system calls of a takeover (or of writing its pid) blocks the lockfile
 * for STALE_TAKEOVER_MS, and the run started after it (a resume after a crash) must not fail for
 * that. A live holder is refused at once.
 */
export async function acquireLock(path: string, onWait?: (why: string) => void): Promise<() => void> {
  const deadline = Date.now() + STALE_TAKEOVER_MS + 2_000;
  for (let waited = false; ; waited = true) {
    try {
      return tryLock(path);
    } catch (err) {
      if (!(err instanceof LockedError) || !err.holderGone || Date.now() > deadline) throw err;
      if (!waited) onWait?.(`waiting for this goal's lock: a goal-loop killed as it took the lock over left it half taken over; it clears within ${STALE_TAKEOVER_MS / 1000} s`);
    }
    await sleep(100);
  }
}
