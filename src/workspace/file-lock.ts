import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export class LockTimeoutError extends Error {
  override name = 'LockTimeoutError';
}

export interface FileLockOptions {
  /** How long `acquire` waits for another holder (default 10 min: a first clone can be slow). */
  timeoutMs?: number;
  /** A lock written on another host counts as stale after this long (default 1 h). */
  foreignStaleMs?: number;
}

/** Paths locked by this process: a pid in a lockfile cannot tell two holders in one process apart. */
const heldHere = new Set<string>();
const HOST = hostname();
/** A lockfile still empty after this long was left by a creator that died before writing its pid. */
const EMPTY_GRACE_MS = 5_000;

/**
 * An exclusive lock between processes and within one: a lockfile created with O_EXCL holding
 * `pid host`. A lock whose process is dead (same host) is stale and taken over.
 */
export class FileLock {
  private ino: number | undefined;

  constructor(
    readonly path: string,
    private readonly opts: FileLockOptions = {},
  ) {}

  /** Waits until the lock is ours; LockTimeoutError after `timeoutMs`. */
  async acquire(): Promise<void> {
    const deadline = Date.now() + (this.opts.timeoutMs ?? 600_000);
    for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
      if (await this.tryAcquire()) return;
      if (Date.now() > deadline) throw new LockTimeoutError(`timed out waiting for the lock ${this.path} (${await this.describeHolder()})`);
      await sleep(pause);
    }
  }

  /** Takes the lock if it is free (or stale); false when someone holds it. Never waits. */
  async tryAcquire(): Promise<boolean> {
    if (heldHere.has(this.path)) return false;
    heldHere.add(this.path); // synchronously, so two callers in this process never both get here
    try {
      await mkdir(dirname(this.path), { recursive: true });
      for (let attempt = 0; attempt < 3; attempt++) {
        if (await this.create()) return true;
        if (!(await this.removeIfStale())) break;
      }
    } catch (err) {
      heldHere.delete(this.path);
      throw err;
    }
    heldHere.delete(this.path);
    return false;
  }

  async release(): Promise<void> {
    if (this.ino === undefined) return;
    // Only our own file: had we been judged stale, the lockfile may be someone else's by now.
    const current = await stat(this.path).catch(() => undefined);
    if (current?.ino === this.ino) await unlink(this.path).catch(() => undefined);
    this.ino = undefined;
    heldHere.delete(this.path);
  }

  private async create(): Promise<boolean> {
    try {
      await writeFile(this.path, `${process.pid} ${HOST} ${Date.now()}\n`, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
    this.ino = (await stat(this.path)).ino;
    return true;
  }

  /** Removes the lockfile if its holder is gone; true when it did (the caller retries at once). */
  private async removeIfStale(): Promise<boolean> {
    const before = await stat(this.path).catch(() => undefined);
    if (!before) return true; // released meanwhile
    const content = await readFile(this.path, 'utf8').catch(() => '');
    if (!isStale(content, Date.now() - before.mtimeMs, this.opts.foreignStaleMs ?? 3_600_000)) return false;
    // Move it aside first: if another process replaced it after our look, put theirs back.
    const aside = `${this.path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      await rename(this.path, aside);
    } catch {
      return true; // someone else took it over first; try again
    }
    const moved = await stat(aside).catch(() => undefined);
    if (moved && moved.ino !== before.ino) await link(aside, this.path).catch(() => undefined);
    await unlink(aside).catch(() => undefined);
    return true;
  }

  private async describeHolder(): Promise<string> {
    const content = (await readFile(this.path, 'utf8').catch(() => '')).trim();
    const [pid, host] = content.split(' ');
    return pid ? `held by pid ${pid} on ${host ?? '?'}` : 'holder unknown';
  }
}

function isStale(content: string, ageMs: number, foreignStaleMs: number): boolean {
  const [pidText, host] = content.trim().split(' ');
  const pid = Number.parseInt(pidText ?? '', 10);
  if (!Number.isFinite(pid) || !host) return ageMs > EMPTY_GRACE_MS; // being written, or its writer died
  if (host !== HOST) return ageMs > foreignStaleMs;
  if (pid === process.pid) return true; // not held here (checked first), so a leftover of ours
  return !isAlive(pid);
}

/** True when a process with this pid exists (EPERM: it exists, owned by someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
