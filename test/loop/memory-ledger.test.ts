import type { Ledger } from '../../src/ports/ledger.js';
import { describeLedgerContract } from '../helpers/ledger-contract.js';
import { MemoryLedger } from '../helpers/memory-ledger.js';

// The fast tier's ledger keeps the rules the real ledgers keep, so a fast test cannot pass on a
// ledger that behaves otherwise. The contract uses only goals, attempts, the outbox, `prune` and
// `close` (the inbox and leases are the store contract's), all of which MemoryLedger has.
let current = new MemoryLedger();
describeLedgerContract(
  'in-memory (the fast tier)',
  async () => {
    current = new MemoryLedger();
    return current as unknown as Ledger;
  },
  async () => current.connect() as unknown as Ledger,
);
