import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { drainEffects } from '../../src/loop/outbox.js';
import type { PendingEffect } from '../../src/ports/outbox.js';
import { key, spec } from '../helpers/ledger-contract.js';
import { MemoryLedger } from '../helpers/memory-ledger.js';

const silent = pino({ level: 'silent' });

describe('drainEffects', () => {
  it('keeps its claim while a slow try goes on (a write waiting for the budget): another drain does not perform the effect meanwhile', async () => {
    const ledger = new MemoryLedger();
    await ledger.upsertGoal(key, { spec: spec(), branch: 'b' });
    await ledger.recordChange(key, { effects: [{ kind: 'comment', payload: { body: 'once' } }] });
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const performed: Array<{ holder: string; attempts: number }> = [];
    const drain = (holder: string, perform: (e: PendingEffect) => Promise<void>) => drainEffects({ outbox: ledger, key, holder, claimMs: 300, logger: silent, perform });

    const slow = drain('w1', async (e) => {
      performed.push({ holder: 'w1', attempts: e.attempts });
      await gate;
    });
    while (performed.length === 0) await new Promise((r) => setImmediate(r));
    // Several claim times later, the first try still holds it (renewed every third of one).
    await new Promise((r) => setTimeout(r, 1000));
    expect(await drain('w2', async (e) => void performed.push({ holder: 'w2', attempts: e.attempts }))).toBe(0);
    open();
    expect(await slow).toBe(1);
    expect(performed).toEqual([{ holder: 'w1', attempts: 1 }]);
    expect(await ledger.pendingEffects({ key })).toEqual([]);
  });
});
