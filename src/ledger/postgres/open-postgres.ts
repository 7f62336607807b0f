import type { Store } from '../open-ledger.js';
import { applyPendingMigrations, withStartupLock } from './migrations.js';
import { PgBossWorkQueue } from './pgboss-queue.js';
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
    // One process at a time migrates, installs pg-boss and creates its queue: pg-boss's
    // create_queue is not safe to race (a second INSERT into pgboss.queue waits on the first
    // transaction, which then waits on it to add its foreign key: a deadlock, 40P01).
    const queue = await withStartupLock(pool, async (client) => {
      await applyPendingMigrations(client);
      return PgBossWorkQueue.start(pool, url);
    });
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
