import { existsSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileLock, LockTimeoutError } from '../../src/workspace/file-lock.js';
import { tempDir } from '../helpers/temp.js';
import { foreignLock } from './mirror-helpers.js';

describe('FileLock', () => {
  it('excludes a second holder in the same process until released', async () => {
    const path = join(await tempDir(), 'm.lock');
    const a = new FileLock(path);
    const b = new FileLock(path, { timeoutMs: 200 });
    await a.acquire();
    expect(await b.tryAcquire()).toBe(false);
    await expect(b.acquire()).rejects.toBeInstanceOf(LockTimeoutError);
    await a.release();
    expect(await b.tryAcquire()).toBe(true);
    await b.release();
    expect(existsSync(path)).toBe(false);
  });

  it('serializes concurrent holders: never two inside at once', async () => {
    const path = join(await tempDir(), 'm.lock');
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        const lock = new FileLock(path);
        await lock.acquire();
        inside += 1;
        most = Math.max(most, inside);
        await new Promise((r) => setTimeout(r, 5));
        inside -= 1;
        await lock.release();
      }),
    );
    expect(most).toBe(1);
  });

  it('waits for a live process on this host, and takes the lock over once it is dead', async () => {
    const path = join(await tempDir(), 'm.lock');
    const holder = foreignLock(path);
    const lock = new FileLock(path);
    expect(await lock.tryAcquire()).toBe(false);
    const waiting = lock.acquire();
    holder.kill('SIGKILL');
    await waiting;
    await lock.release();
  });

  it('takes over a lock whose pid is gone, but not an empty one that is being written', async () => {
    const path = join(await tempDir(), 'm.lock');
    writeFileSync(path, `999999999 ${hostname()} 0\n`);
    const lock = new FileLock(path);
    expect(await lock.tryAcquire()).toBe(true);
    await lock.release();
    writeFileSync(path, '');
    expect(await lock.tryAcquire()).toBe(false);
  });

  it('tryAcquireSync and releaseSync: the same lock, for a caller that cannot wait', async () => {
    const path = join(await tempDir(), 'm.lock');
    const a = new FileLock(path);
    const b = new FileLock(path);
    expect(a.tryAcquireSync()).toBe(true);
    expect(b.tryAcquireSync()).toBe(false); // held in this process
    expect(await b.tryAcquire()).toBe(false);
    expect(b.holderPid()).toBe(process.pid);
    a.releaseSync();
    expect(existsSync(path)).toBe(false);
    expect(b.tryAcquireSync()).toBe(true);
    b.releaseSync();
  });

  it('a lock taken over from a dead holder is then held: a second taker leaves it in place', async () => {
    const path = join(await tempDir(), 'm.lock');
    writeFileSync(path, `999999999 ${hostname()} 0\n`);
    const first = new FileLock(path);
    expect(first.tryAcquireSync()).toBe(true); // took the stale one over
    const second = new FileLock(path);
    expect(second.tryAcquireSync()).toBe(false);
    expect(existsSync(path)).toBe(true);
    first.releaseSync();
  });
});
