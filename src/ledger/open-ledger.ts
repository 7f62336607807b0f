import { resolve } from 'node:path';
import type { Ledger } from '../ports/ledger.js';
import type { WorkQueue } from '../ports/queue.js';
import { SqliteWorkQueue } from './sqlite/sqlite-queue.js';
import { openSqlite } from './sqlite/database.js';
import { SqliteLedger } from './sqlite/sqlite-ledger.js';

export const DEFAULT_DB_PATH = './.goal-loop/ledger.db';

/** The embedded ledger: `GOAL_LOOP_DB` (SQLite), default `./.goal-loop/ledger.db`. */
export function openLedger(env: NodeJS.ProcessEnv = process.env): Ledger {
  return new SqliteLedger(resolve(env.GOAL_LOOP_DB || DEFAULT_DB_PATH));
}

/** Where goals and their queue live: the ledger and the work queue share one database. */
export interface Store {
  kind: 'sqlite' | 'postgres';
  /** Where it is, without credentials (for logs and `status`). */
  location: string;
  ledger: Ledger;
  queue: WorkQueue;
  close(): Promise<void>;
}

/** The embedded store: one SQLite file holds the ledger and the queue. */
export function openSqliteStore(path: string): Store {
  const db = openSqlite(path);
  const ledger = new SqliteLedger(db);
  return { kind: 'sqlite', location: path, ledger, queue: new SqliteWorkQueue(db), close: () => ledger.close() };
}

/**
 * Where this process keeps goals and their queue: PostgreSQL (ledger + pg-boss) when
 * `DATABASE_URL` is a postgres:// URL, else the SQLite file at `GOAL_LOOP_DB`.
 */
export async function openStore(env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const url = env.DATABASE_URL;
  if (!url) return openSqliteStore(resolve(env.GOAL_LOOP_DB || DEFAULT_DB_PATH));
  if (!/^postgres(ql)?:\/\//.test(url)) throw new Error('DATABASE_URL must be a postgres:// (or postgresql://) URL');
  // Loaded on demand: the embedded store never needs pg or pg-boss.
  const { openPostgresStore } = await import('./postgres/open-postgres.js');
  return openPostgresStore(url);
}
