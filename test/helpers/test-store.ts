import { join } from 'node:path';
import { openSqliteStore, type Store } from '../../src/ledger/open-ledger.js';
import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import { freshDatabase } from './postgres.js';

/** Which store the integration suites run on: the `postgres` vitest project sets GOAL_LOOP_TEST_STORE. */
export const TEST_STORE: 'sqlite' | 'postgres' = process.env.GOAL_LOOP_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** A fresh, empty store of the suite's kind: a SQLite file under `root`, or a database of its own. */
export async function openTestStore(root: string): Promise<Store> {
  if (TEST_STORE === 'postgres') {
    const store = await openPostgresStore(await freshDatabase());
    if (store.kind !== 'postgres') throw new Error('the postgres suite opened a store of another kind');
    return store;
  }
  return openSqliteStore(join(root, 'ledger.db'));
}
