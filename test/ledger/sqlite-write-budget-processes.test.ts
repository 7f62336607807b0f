import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteLedger } from '../../src/ledger/sqlite/sqlite-ledger.js';
import { ensureBuilt } from '../helpers/build.js';
import { tempDir } from '../helpers/temp.js';

const LEDGER = fileURLToPath(new URL('../../dist/src/ledger/sqlite/sqlite-ledger.js', import.meta.url));
const PROCESSES = 3;
const ROUNDS = 40;
const ASKS = 6;
const T0 = Date.UTC(2026, 0, 1);

/**
 * One process: opens the ledger, says "ready", waits for the go file, then, round after round,
 * asks for ASKS writes at the round's instant (10 allowed a second, rounds a second apart). The
 * processes start together and go at about the same pace, so their asks interleave. The hour
 * window keeps every write in the table for the check (nothing is old enough to be dropped).
 */
const CHILD = `
import { existsSync } from 'node:fs';
const { SqliteLedger } = await import(process.env.LEDGER_MODULE);
const ledger = new SqliteLedger(process.env.LEDGER_PATH);
const limits = { windows: [{ ms: 1000, max: 10 }, { ms: 3600000, max: 100000 }], shares: { urgent: 1, normal: 0.8, background: 0.5 } };
console.log('ready');
while (!existsSync(process.env.GO_FILE)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
for (let round = 0; round < ${ROUNDS}; round++) {
  for (let i = 0; i < ${ASKS}; i++) await ledger.tryTakeWrite({ installation: 'i-1', priority: 'urgent', limits, atMs: ${T0} + round * 1000 });
}
await ledger.close();
`;

function startChild(path: string, go: string): { ready: Promise<void>; done: Promise<void> } {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], { env: { ...process.env, LEDGER_MODULE: LEDGER, LEDGER_PATH: path, GO_FILE: go }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const ready = new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('ready')) resolve();
    });
  });
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`child exited ${code}: ${out}`))));
  });
  return { ready, done };
}

describe('SQLite write budget across processes', () => {
  it('attack: processes racing on one file never put more than the window’s max in any second', async () => {
    await ensureBuilt();
    const dir = await tempDir('goal-budget-procs-');
    const path = join(dir, 'ledger.db');
    await new SqliteLedger(path).close(); // migrated before the race
    const go = join(dir, 'go');
    const children = Array.from({ length: PROCESSES }, () => startChild(path, go));
    await Promise.all(children.map((c) => c.ready));
    writeFileSync(go, '');
    await Promise.all(children.map((c) => c.done));
    const db = new Database(path, { readonly: true });
    const times = (db.prepare('SELECT at FROM write_events ORDER BY at').all() as Array<{ at: number }>).map((r) => r.at);
    db.close();
    const busiest = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));
    expect(busiest).toBe(10);
    // The budget was used: a check that an empty table would not pass.
    expect(times.length).toBeGreaterThan(ROUNDS * 5);
  });
});
