import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A lock shared by processes (vitest's forks, or two test runs in one checkout): a directory that
// only one of them can create, holding the holder's pid so a lock left by a dead process is taken over.

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `fn` holding the lock `dir`; waits up to `timeoutMs` for another holder to finish. */
export async function withLock<T>(dir: string, fn: () => Promise<T>, timeoutMs = 600_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    try {
      mkdirSync(dir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = Number.NaN;
    try {
      holder = Number(readFileSync(join(dir, 'pid'), 'utf8'));
    } catch {
      // the holder has not written its pid yet, or just let go
    }
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) {
      rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for the lock ${dir} (held by pid ${holder})`);
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    writeFileSync(join(dir, 'pid'), String(process.pid));
    return await fn();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
