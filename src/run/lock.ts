import { dirname } from 'node:path';
import { InputError } from '../common/errors.js';
import { makeDirs } from '../common/make-dirs.js';
import { FileLock } from '../workspace/file-lock.js';

export class LockedError extends Error {
  override name = 'LockedError';
}

/**
 * An exclusive lock on one goal's workspace, so two runs never work the same clone: the
 * workspace's FileLock (a lockfile of `pid host`, a dead holder's taken over by exactly one
 * process), taken without waiting. Returns its release.
 */
export function acquireLock(path: string): () => void {
  try {
    makeDirs(dirname(path));
  } catch (err) {
    throw new InputError(`cannot create the workspace directory ${dirname(path)} (GOAL_LOOP_WORKSPACES): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const lock = new FileLock(path);
  if (!lock.tryAcquireSync()) {
    const pid = lock.holderPid() ?? process.pid; // not in the file: held by this process, or being written
    throw new LockedError(`another goal-loop (pid ${pid}) is working this goal; lock: ${path}`);
  }
  return () => lock.releaseSync();
}
