import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { acquireLock, LockedError, tryLock } from '../../src/run/lock.js';
import { tempDir } from '../helpers/temp.js';

const LOCK_MODULE = fileURLToPath(new URL('../../dist/src/run/lock.js', import.meta.url));

/**
 * One process that waits for `startAt`, then takes the lock with the built run/lock.ts, prints
 * `won` or `locked`, and keeps what it won until `holdUntil` (so a loser cannot take over a
 * released lock and count as a second winner).
 */
const CONTENDER = `
const { tryLock, LockedError } = await import(process.argv[1]);
const [path, startAt, holdUntil] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
while (Date.now() < startAt);
let out;
try { tryLock(path); out = 'won'; } catch (err) { out = err instanceof LockedError ? 'locked' : 'error ' + err.message; }
process.stdout.write(out);
setTimeout(() => process.exit(0), Math.max(0, holdUntil - Date.now()));
`;

function contend(path: string, startAt: number, holdUntil: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CONTENDER, LOCK_MODULE, path, String(startAt), String(holdUntil)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

/** A lockfile left by a process that died (this host, a pid that cannot exist). */
const staleLock = (path: string) => writeFileSync(path, `999999999 ${hostname()} 0\n`);

describe('tryLock (a goal workspace lock between processes)', () => {
  it('two processes taking a stale lock at once: exactly one wins', { timeout: 120_000 }, async () => {
    const dir = await tempDir();
    for (let round = 0; round < 5; round++) {
      const path = join(dir, `goal-${round}.lock`);
      staleLock(path);
      const startAt = Date.now() + 1_500; // every contender started and spinning by then
      const results = await Promise.all(Array.from({ length: 4 }, () => contend(path, startAt, startAt + 2_000)));
      expect(
        results.filter((r) => r === 'won'),
        `round ${round}: ${results.join(', ')}`,
      ).toHaveLength(1);
      expect(results.filter((r) => r === 'locked')).toHaveLength(3);
    }
  });

  it('refuses a lock held by a live process and names its pid; takes it once released', async () => {
    const path = join(await tempDir(), 'goal.lock');
    const startAt = Date.now();
    const holder = contend(path, startAt, startAt + 3_000);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(() => tryLock(path)).toThrow(LockedError);
    expect(() => tryLock(path)).toThrow(/another goal-loop \(pid \d+\) is working this goal/);
    expect(await holder).toBe('won');
    const release = tryLock(path); // its holder exited without releasing: stale
    release();
    tryLock(path)();
  });

  it('honors a lock an older goal-loop wrote (a pid alone): refused while that process lives, taken once it is gone', async () => {
    const path = join(await tempDir(), 'goal.lock');
    writeFileSync(path, `${process.ppid}\n`); // alive: the process that runs this test's worker
    await new Promise((r) => setTimeout(r, 50));
    expect(() => tryLock(path)).toThrow(LockedError);
    writeFileSync(path, '999999999\n');
    tryLock(path)();
  });

  it('takes over a stale lock left by a dead process', async () => {
    const path = join(await tempDir(), 'goal.lock');
    staleLock(path);
    const release = tryLock(path);
    release();
  });

  it('a run killed while taking a stale lock over (its takeover file left) does not lock out the next: tryLock says so, acquireLock waits it out', async () => {
    const path = join(await tempDir(), 'goal.lock');
    staleLock(path);
    writeFileSync(`${path}.takeover`, `999999999 ${hostname()} ${Date.now()}\n`); // its writer died mid-takeover, just now
    let refused: unknown;
    try {
      tryLock(path);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(LockedError);
    expect((refused as LockedError).holderGone).toBe(true);
    expect((refused as Error).message).toMatch(/left it half taken over \(pid 999999999, gone\); it clears within 5 s, try again/);
    const release = await acquireLock(path);
    expect(readFileSync(path, 'utf8')).toMatch(new RegExp(`^${process.pid} `));
    release();
  });

  it('acquireLock refuses a live holder at once, as tryLock does', async () => {
    const path = join(await tempDir(), 'goal.lock');
    writeFileSync(path, `${process.ppid} ${hostname()} ${Date.now()}\n`); // alive: the process that runs this test's worker
    const refused = await acquireLock(path).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(LockedError);
    expect((refused as LockedError).holderGone).toBe(false);
    expect((refused as Error).message).toMatch(/another goal-loop \(pid \d+\) is working this goal/);
  });
});
