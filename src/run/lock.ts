import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeDirs } from '../shared/make-dirs.js';
import { InputError } from '../shared/errors.js';

export class LockedError extends Error {
  override name = 'LockedError';
}

/** An exclusive lock on one goal's workspace, so two runs never work the same clone. */
export function acquireLock(path: string): () => void {
  try {
    makeDirs(dirname(path));
  } catch (err) {
    throw new InputError(`cannot create the workspace directory ${dirname(path)} (GOAL_LOOP_WORKSPACES): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
      if (Number.isFinite(pid) && pid !== process.pid && isAlive(pid)) {
        throw new LockedError(`another goal-loop (pid ${pid}) is working this goal; lock: ${path}`);
      }
      rmSync(path, { force: true }); // stale: its owner died
    }
  }
  throw new Error(`cannot take the lock ${path}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
