import { PostgresLedger } from '../../src/ledger/postgres/postgres-ledger.js';
import { freshDatabase } from '../helpers/postgres.js';
import { describeWriteBudgetContract } from '../helpers/write-budget-contract.js';

// Each connection is a ledger (a pool) of its own on one database, as each process has.
let url = '';
describeWriteBudgetContract(
  'PostgreSQL',
  async () => {
    url = await freshDatabase();
    return PostgresLedger.open(url);
  },
  async () => PostgresLedger.open(url),
);
