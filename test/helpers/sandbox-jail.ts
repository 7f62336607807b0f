import { readdirSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { CommandRequest, CommandResult, Sandbox } from '../../src/ports/sandbox.js';
import { BwrapSandbox, type BwrapSandboxOptions } from '../../src/sandbox/bwrap-sandbox.js';
import { discoverToolchain, isUnder, type Toolchain } from '../../src/sandbox/toolchain.js';
import { tempDir } from './temp.js';

export const quietLogger = pino({ level: 'silent' });

/** A fresh temp root with an empty `workspace/` inside it. */
export async function jailRoot(): Promise<{ root: string; ws: string }> {
  const root = await tempDir('goal-loop-jail-test-');
  const ws = join(root, 'workspace');
  await mkdir(ws);
  return { root, ws };
}

/** This checkout: npm and vitest put its node_modules/.bin first on PATH. */
const CHECKOUT = resolve(fileURLToPath(new URL('../../', import.meta.url)));

/**
 * A jail as the bot would make it. A direct one runs bwrap as the jail uid, which must reach
 * every tool it binds; the checkout may sit where that uid cannot (under /root, or in a 0700
 * `mktemp -d` folder), and its node_modules/.bin (pnpm) is on PATH only because the tests run
 * through npm: a direct jail's tools are looked up on the host PATH without the checkout.
 */
export function jail(opts: BwrapSandboxOptions = {}): BwrapSandbox {
  const toolchain = opts.jailMode === 'direct' && !opts.toolchain ? { toolchain: directToolchain() } : {};
  return new BwrapSandbox({ logger: quietLogger, ...toolchain, ...opts });
}

/** The toolchain of a direct jail in the tests: found on the host PATH without the directories inside this checkout. */
export function directToolchain(): Toolchain {
  const hostPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d !== '' && !isUnder(d, CHECKOUT))
    .join(delimiter);
  return discoverToolchain({ hostPath });
}

/** Runs one command with a generous timeout (the tests never assert on time). */
export function runIn(sandbox: Sandbox, cwd: string, command: string, extra: Partial<CommandRequest> = {}): Promise<CommandResult> {
  return sandbox.run({ command, cwd, timeoutMs: 30_000, ...extra });
}

/**
 * Pids of the live host processes whose real uid is `uid`. Zombies are left out: they are dead
 * and run nothing, they only wait for their parent (after a kill, the host's init) to reap them.
 */
export function processesOfUid(uid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const m = /^Uid:\s+(\d+)/m.exec(status);
      if (m && Number(m[1]) === uid && !/^State:\s+[ZX]/m.test(status)) out.push(Number(name));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Pids of the host processes whose command line contains `token`. */
export function processesMatching(token: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').includes(token)) out.push(Number(name));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Pids of the host processes whose argv[0] is exactly `name` (see `exec -a`). */
export function processesNamed(name: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === name) out.push(Number(pid));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Samples, until stopped, the largest number of host processes running as `uid`. */
export function sampleProcessCount(uid: number, everyMs = 25): { stop(): number } {
  let max = 0;
  const timer = setInterval(() => {
    max = Math.max(max, processesOfUid(uid).length);
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return max;
    },
  };
}

/** Samples, until stopped, this process's peak resident set size. */
export function sampleRss(everyMs = 2): { stop(): number } {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage().rss);
    },
  };
}

/** Node one-liner run inside a command: `node -e '<code>'` with the code shell-quoted. */
export function nodeScript(code: string): string {
  return `node -e ${shellQuote(code)}`;
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
