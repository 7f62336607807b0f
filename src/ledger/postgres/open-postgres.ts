import { PgBossWorkQueue } from '../../queue/pgboss-queue.js';
import type { Store } from '../open-ledger.js';
import { migratePostgres } from './migrations.js';
import { createPool } from './pool.js';
import { PostgresLedger } from './postgres-ledger.js';

/** `url` without its password, for logs and `status`. */
export function redactUrl(url: string): string {
  const u = new URL(url);
  u.password = '';
  u.searchParams.delete('password');
  return u.toString();
}

/** The scale-out store: the ledger's tables (schema goal_loop) and pg-boss's queue (schema pgboss) in one database. */
export async function openPostgresStore(url: string): Promise<Store> {
  const pool = createPool(url);
  const ledger = new PostgresLedger(pool);
  try {
    await migratePostgres(pool);
    const queue = await PgBossWorkQueue.start(pool, url);
    return {
      kind: 'postgres',
      location: redactUrl(url),
      ledger,
      queue,
      close: async () => {
        await queue.close();
        await ledger.close();
      },
    };
  } catch (err) {
    await ledger.close();
    throw err;
  }
}
