import { join } from 'node:path';
import { SqliteLedger } from '../../src/ledger/sqlite/sqlite-ledger.js';
import { tempDir } from '../helpers/temp.js';
import { describeWriteBudgetContract } from '../helpers/write-budget-contract.js';

// Each connection is a database handle of its own on one file, as each process has.
let path = '';
describeWriteBudgetContract(
  'SQLite',
  async () => {
    path = join(await tempDir('goal-budget-'), 'ledger.db');
    return new SqliteLedger(path);
  },
  async () => new SqliteLedger(path),
);
