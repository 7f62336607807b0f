import { readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
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
/**
 * A lockfile still empty after this long was left by a creator that died before writing its pid;
 * a takeover file this old, by one that died while taking a stale lock over.
 */
export const STALE_TAKEOVER_MS = 5_000;
const EMPTY_GRACE_MS = STALE_TAKEOVER_MS;

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
    await mkdir(dirname(this.path), { recursive: true });
    return this.tryAcquireSync();
  }

  /**
   * `tryAcquire` for a caller that cannot wait for a promise (the directory must exist). The file
   * operations are a handful of small local syscalls, done synchronously in both forms, so no
   * other caller in this process runs between the look at a lockfile and acting on it.
   */
  tryAcquireSync(): boolean {
    if (heldHere.has(this.path)) return false;
    heldHere.add(this.path);
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        if (this.create()) return true;
        if (!this.removeIfStale()) break;
      }
    } catch (err) {
      heldHere.delete(this.path);
      throw err;
    }
    heldHere.delete(this.path);
    return false;
  }

  /** The pid written in the lockfile by its holder, if any (for a message). */
  holderPid(): number | undefined {
    const pid = Number.parseInt(readText(this.path).split(' ')[0] ?? '', 10);
    return Number.isFinite(pid) ? pid : undefined;
  }

  /** Whether the lockfile was written on this host (or by an older goal-loop, which wrote no host): its pid says whether its holder lives. */
  holderOnThisHost(): boolean {
    const host = readText(this.path).trim().split(' ')[1];
    return host === undefined || host === HOST;
  }

  async release(): Promise<void> {
    this.releaseSync();
  }

  releaseSync(): void {
    if (this.ino === undefined) return;
    // Only our own file: had we been judged stale, the lockfile may be someone else's by now.
    const current = statSync(this.path, { throwIfNoEntry: false });
    if (current?.ino === this.ino) unlinkQuietly(this.path);
    this.ino = undefined;
    heldHere.delete(this.path);
  }

  private create(): boolean {
    try {
      writeFileSync(this.path, `${process.pid} ${HOST} ${Date.now()}\n`, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
    this.ino = statSync(this.path).ino;
    return true;
  }

  /**
   * Removes the lockfile if its holder is gone; true when it did (the caller retries at once).
   * Never a bare check-then-delete: two processes that both judged the same file stale must not
   * both delete it (the second would delete the first one's fresh lock). The judging and the
   * delete happen under a second lock, `<path>.takeover` (O_EXCL), and only the very file judged
   * stale (same inode) is deleted; a fresh lock made meanwhile has another inode, or a live holder.
   */
  private removeIfStale(): boolean {
    const foreignStaleMs = this.opts.foreignStaleMs ?? 3_600_000;
    const before = statSync(this.path, { throwIfNoEntry: false });
    if (!before) return true; // released meanwhile
    if (!isStale(readText(this.path), Date.now() - before.mtimeMs, foreignStaleMs)) return false;
    const takeover = `${this.path}.takeover`;
    try {
      writeFileSync(takeover, `${process.pid} ${HOST} ${Date.now()}\n`, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Another process is taking over right now. Its takeover file outlives it only if it died
      // within these few syscalls: then, and only then, it is cleared for the next try.
      const t = statSync(takeover, { throwIfNoEntry: false });
      if (t && isStale(readText(takeover), Date.now() - t.mtimeMs, EMPTY_GRACE_MS) && Date.now() - t.mtimeMs > EMPTY_GRACE_MS) unlinkQuietly(takeover);
      return false;
    }
    try {
      const now = statSync(this.path, { throwIfNoEntry: false });
      if (!now) return true;
      if (now.ino !== before.ino || !isStale(readText(this.path), Date.now() - now.mtimeMs, foreignStaleMs)) return false;
      unlinkQuietly(this.path);
      return true;
    } finally {
      unlinkQuietly(takeover);
    }
  }

  private async describeHolder(): Promise<string> {
    const content = (await readFile(this.path, 'utf8').catch(() => '')).trim();
    const [pid, host] = content.split(' ');
    return pid ? `held by pid ${pid} on ${host ?? '?'}` : 'holder unknown';
  }
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

function isStale(content: string, ageMs: number, foreignStaleMs: number): boolean {
  const [pidText, host] = content.trim().split(' ');
  const pid = Number.parseInt(pidText ?? '', 10);
  if (!Number.isFinite(pid)) return ageMs > EMPTY_GRACE_MS; // being written, or its writer died
  if (!host) return !isAlive(pid); // a pid alone: an older goal-loop on this host wrote it
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
