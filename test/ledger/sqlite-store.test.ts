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

// How `goal-loop serve` and `goal-loop worker` open it: the same contract, checkpoints on a thread.
let servicePath = '';
describeStoreContract(
  'SQLite, checkpoints in the background',
  async () => {
    servicePath = join(await tempDir('goal-store-bg-'), 'ledger.db');
    return openSqliteStore(servicePath, { checkpoints: 'background' });
  },
  async () => openSqliteStore(servicePath, { checkpoints: 'background' }),
);
