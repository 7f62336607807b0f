import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import { freshDatabase } from '../helpers/postgres.js';
import { describeStoreContract } from '../helpers/store-contract.js';

let url = '';
describeStoreContract(
  'PostgreSQL',
  async () => {
    url = await freshDatabase();
    return openPostgresStore(url);
  },
  async () => openPostgresStore(url),
);
