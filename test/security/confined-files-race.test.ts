import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfinedFiles, ConfinementError } from '../../src/sandbox/confined-files.js';
import { jail, jailRoot, nodeScript, runIn } from '../helpers/sandbox-jail.js';

const ITERATIONS = 500;

/**
 * A node program that keeps swapping `ws/dir` between the real directory and a symlink to
 * `outside`, until `ws/stop` appears (or a bounded number of swaps, or 60 s), then leaves the real
 * directory in place and prints how many swaps it made. A directory the victim's write creates
 * while `dir` is briefly missing is moved aside, so the attacker never stalls.
 */
function attacker(ws: string, outside: string): string {
  const names = { dir: join(ws, 'dir'), real: join(ws, 'dir.real'), link: join(ws, 'dir.link'), ready: join(ws, 'ready'), stop: join(ws, 'stop') };
  return `
const fs = require('node:fs');
const n = ${JSON.stringify(names)};
let junk = 0;
const place = (from, to) => {
  for (let i = 0; i < 1000; i++) {
    try { fs.renameSync(from, to); return; } catch { try { fs.renameSync(to, n.dir + '.junk' + junk++); } catch {} }
  }
  throw new Error('could not place ' + from);
};
fs.symlinkSync(${JSON.stringify(outside)}, n.link);
fs.writeFileSync(n.ready, '');
let swaps = 0;
const deadline = Date.now() + 60000;
while (swaps < 5000000 && Date.now() < deadline && !fs.existsSync(n.stop)) {
  place(n.dir, n.real);
  place(n.link, n.dir);
  place(n.dir, n.link);
  place(n.real, n.dir);
  swaps++;
}
console.log('swaps=' + swaps);
`;
}

interface Tally {
  leaks: { read: number; write: number; list: number; remove: number };
  okReads: number;
  refused: number;
  otherErrors: string[];
}

/** Hammers the confined tools on `dir/…` while the attacker runs; counts what reached `outside`. */
async function hammer(ws: string, outside: string): Promise<Tally> {
  const files = new ConfinedFiles(ws);
  const t: Tally = { leaks: { read: 0, write: 0, list: 0, remove: 0 }, okReads: 0, refused: 0, otherErrors: [] };
  const attempt = async <T>(op: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await op();
    } catch (err) {
      if (err instanceof ConfinementError) t.refused++;
      else t.otherErrors.push(String(err));
      return undefined;
    }
  };
  for (let i = 0; i < ITERATIONS; i++) {
    // Directly, and through an in-workspace symlink `via -> dir` (the followed link is walked again).
    for (const path of ['dir/secret.txt', 'via/secret.txt']) {
      const text = await attempt(() => files.read(path));
      if (text?.includes('OUTSIDE')) t.leaks.read++;
      else if (text !== undefined) t.okReads++;
    }

    await attempt(() => files.write('dir/out.txt', `write ${i}\n`));
    if (existsSync(join(outside, 'out.txt'))) {
      t.leaks.write++;
      unlinkSync(join(outside, 'out.txt'));
    }
    // Creating a missing directory never follows the swapped-in link either.
    await attempt(() => files.write('dir/sub/new.txt', 'new\n'));
    if (existsSync(join(outside, 'sub'))) {
      t.leaks.write++;
      rmSync(join(outside, 'sub'), { recursive: true });
    }

    const listed = await attempt(() => files.list('dir'));
    if (listed?.entries.some((e) => e.name === 'outside-only.txt')) t.leaks.list++;

    await attempt(() => files.write('dir/victim.txt', 'inside victim\n'));
    if (readFileSync(join(outside, 'victim.txt'), 'utf8') !== 'outside victim\n') {
      t.leaks.write++;
      writeFileSync(join(outside, 'victim.txt'), 'outside victim\n');
    }
    await attempt(() => files.remove('dir/victim.txt'));
    if (!existsSync(join(outside, 'victim.txt'))) {
      t.leaks.remove++;
      writeFileSync(join(outside, 'victim.txt'), 'outside victim\n');
    }
  }
  return t;
}

async function setup(): Promise<{ ws: string; outside: string }> {
  const { root, ws } = await jailRoot();
  const outside = join(root, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE SECRET\n');
  writeFileSync(join(outside, 'outside-only.txt'), 'x\n');
  writeFileSync(join(outside, 'victim.txt'), 'outside victim\n');
  mkdirSync(join(ws, 'dir'));
  writeFileSync(join(ws, 'dir', 'secret.txt'), 'inside\n');
  symlinkSync('dir', join(ws, 'via'));
  return { ws, outside };
}

async function waitFor(path: string, gaveUp: () => boolean): Promise<void> {
  while (!existsSync(path)) {
    if (gaveUp()) throw new Error(`the attacker never wrote ${path}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function expectConfined(t: Tally, swaps: number, who: string): void {
  console.log(`${who}: ${swaps} swaps; leaks ${JSON.stringify(t.leaks)}; ${t.okReads} reads inside, ${t.refused} refused, ${t.otherErrors.length} other errors`);
  expect(swaps).toBeGreaterThan(0);
  expect(t.leaks).toEqual({ read: 0, write: 0, list: 0, remove: 0 });
  // The race did not just break every call: reads inside the workspace still work.
  expect(t.okReads).toBeGreaterThan(0);
  // Every refusal reaches the model as a ConfinementError, never as a raw fs error.
  expect(t.otherErrors).toEqual([]);
}

describe("the agent's file tools under a concurrent symlink swap", () => {
  it('never read, write, list or remove outside the workspace while a host process swaps a directory for a symlink', async () => {
    const { ws, outside } = await setup();
    const child = spawn(process.execPath, ['-e', attacker(ws, outside)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    let done = false;
    void exited.then(() => (done = true));
    try {
      await waitFor(join(ws, 'ready'), () => done);
      const tally = await hammer(ws, outside);
      writeFileSync(join(ws, 'stop'), '');
      await exited;
      expectConfined(tally, Number(/swaps=(\d+)/.exec(out)?.[1] ?? 0), 'host attacker');
    } finally {
      if (!done) child.kill('SIGKILL');
    }
  });

  it('never read, write, list or remove outside the workspace while a jailed process swaps a directory for a symlink', async () => {
    const { ws, outside } = await setup();
    const stop = new AbortController();
    let done = false;
    const running = runIn(jail(), ws, nodeScript(attacker(ws, outside)), { timeoutMs: 120_000, signal: stop.signal }).finally(() => (done = true));
    try {
      await waitFor(join(ws, 'ready'), () => done);
      const tally = await hammer(ws, outside);
      writeFileSync(join(ws, 'stop'), '');
      const result = await running;
      expect(result.exitCode, result.output).toBe(0);
      expectConfined(tally, Number(/swaps=(\d+)/.exec(result.output)?.[1] ?? 0), 'jailed attacker');
    } finally {
      if (!done) stop.abort();
      await running.catch(() => undefined);
    }
  });
});
