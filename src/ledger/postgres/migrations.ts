import type pg from 'pg';
import { migrationsIn, pendingMigrations } from '../sql/migrations.js';
import { LEDGER_SCHEMA } from './pool.js';

/** The schema history (sql/migrations.ts) in PostgreSQL's SQL. */
export const POSTGRES_MIGRATIONS: readonly string[] = migrationsIn('postgres');

/**
 * Every process migrates on open: this session lock lets one do it while the others wait. The
 * store also holds it while pg-boss installs its schema and creates its queue (see
 * `openPostgresStore`). The key is the one the migrations have always used, so an older process
 * still migrating during a rolling upgrade waits too.
 */
const STARTUP_LOCK = `hashtextextended('${LEDGER_SCHEMA}.migrate', 0)`;

/**
 * Runs `fn` on a connection of its own that holds the start-up advisory lock, so that processes
 * starting at once on one database run it one after another. The lock is a session lock, taken
 * outside any transaction: `fn` may commit several transactions, or start other connections
 * (pg-boss's pool), while it is held. It is released when `fn` settles; a connection that failed
 * is dropped rather than pooled, and the server releases its lock with it.
 */
export async function withStartupLock<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query(`SELECT pg_advisory_lock(${STARTUP_LOCK})`);
    try {
      return await fn(client);
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${STARTUP_LOCK})`);
    }
  } catch (err) {
    failure = err as Error;
    throw err;
  } finally {
    client.release(failure); // a failed connection is dropped, never pooled with the lock held
  }
}

/**
 * Applies pending migrations, one transaction each, recording them in `schema_version`. A schema
 * newer than this code is refused before anything is changed. Returns the version reached.
 */
export async function migratePostgres(pool: pg.Pool): Promise<number> {
  return withStartupLock(pool, applyPendingMigrations);
}

/** `migratePostgres` for a caller already inside `withStartupLock`, on its locked connection. */
export async function applyPendingMigrations(client: pg.PoolClient): Promise<number> {
  await client.query(
    `CREATE SCHEMA IF NOT EXISTS ${LEDGER_SCHEMA};
     CREATE TABLE IF NOT EXISTS ${LEDGER_SCHEMA}.schema_version (
       version INTEGER PRIMARY KEY,
       applied_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
     )`,
  );
  const { rows } = await client.query<{ v: number }>(`SELECT COALESCE(max(version), 0) AS v FROM ${LEDGER_SCHEMA}.schema_version`);
  for (const [version, text] of pendingMigrations(rows[0]!.v, POSTGRES_MIGRATIONS)) {
    await client.query('BEGIN');
    try {
      await client.query(text);
      await client.query(`INSERT INTO ${LEDGER_SCHEMA}.schema_version (version) VALUES ($1)`, [version]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
  }
  return POSTGRES_MIGRATIONS.length;
}
