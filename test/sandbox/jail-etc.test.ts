import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JailEtc } from '../../src/sandbox/jail-etc.js';

const src = (files: Array<{ src: string; dest: string }>, dest: string) => files.find((f) => f.dest === dest)?.src;

describe("the jail's generated /etc files", () => {
  it('names the jail uid, reads as any uid, and is reused by the next jail of that uid', async () => {
    const etc = new JailEtc();
    const first = await etc.acquire(1_000_042, 1_000_043, false);
    const passwd = src(first.files, '/etc/passwd')!;
    expect(readFileSync(passwd, 'utf8')).toContain(':1000042:1000043:');
    expect(readFileSync(src(first.files, '/etc/group')!, 'utf8')).toContain('goal-loop:x:1000043:');
    expect(statSync(passwd).mode & 0o777).toBe(0o644);
    expect(statSync(dirname(passwd)).mode & 0o777).toBe(0o755);
    expect(readFileSync(first.emptyFile, 'utf8')).toBe('');
    await first.release();
    const second = await etc.acquire(1_000_042, 1_000_043, false);
    expect(src(second.files, '/etc/passwd')).toBe(passwd);
    const other = await etc.acquire(1_000_044, 1_000_044, false);
    expect(src(other.files, '/etc/passwd')).not.toBe(passwd);
    await Promise.all([second.release(), other.release()]);
  });

  it('makes them again when they were removed (a temp cleaner), and leaves the host hosts file to a networked command', async () => {
    const etc = new JailEtc();
    const first = await etc.acquire(1_000_050, 1_000_050, false);
    await first.release();
    rmSync(dirname(first.emptyFile), { recursive: true, force: true });
    const again = await etc.acquire(1_000_050, 1_000_050, true);
    expect(readFileSync(src(again.files, '/etc/passwd')!, 'utf8')).toContain(':1000050:1000050:');
    expect(existsSync(again.emptyFile)).toBe(true);
    expect(src(again.files, '/etc/hosts')).not.toBe(`${dirname(again.emptyFile)}/hosts`);
    await again.release();
  });

  it('keeps a bounded number of sets, and never removes one a jail still uses', async () => {
    const etc = new JailEtc(1);
    const inUse = await etc.acquire(1_000_060, 1_000_060, false);
    const next = await etc.acquire(1_000_061, 1_000_061, false);
    expect(existsSync(inUse.emptyFile)).toBe(true); // over the bound, but in use
    expect(existsSync(next.emptyFile)).toBe(true);
    await next.release();
    await inUse.release();
    const third = await etc.acquire(1_000_062, 1_000_062, false);
    expect(existsSync(next.emptyFile)).toBe(false);
    expect(existsSync(inUse.emptyFile)).toBe(false);
    expect(existsSync(third.emptyFile)).toBe(true);
    await third.release();
  });
});
