import { join } from 'node:path';
import { openSqliteStore } from '../../src/ledger/open-ledger.js';
import { describeStoreContract } from '../helpers/store-contract.js';
import { tempDir } from '../helpers/temp.js';

let path = '';
describeStoreContract(
  'SQLite',
  async () => {
    path = join(await tempDir('goal-store-'), 'ledger.db');
    return openSqliteStore(path);
  },
  async () => openSqliteStore(path),
);
