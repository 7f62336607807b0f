import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { adminQuery, withDatabase } from './postgres-cluster.js';

export { adminQuery, postgresBinDir, startThrowawayCluster, TEST_DATABASE_ENV, withDatabase, type Cluster } from './postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A database on the test server whose role may create databases. */
    postgresUrl: string;
    /** A database already migrated (ledger + pg-boss), to copy for each fresh store. */
    postgresTemplate: string;
    /** Prefix of every database this run creates, dropped at teardown. */
    postgresPrefix: string;
  }
}

/**
 * A new database of its own, dropped when the run ends: a copy of the migrated template (ledger
 * and pg-boss installed), or an empty one for tests of the migrations themselves.
 */
export async function freshDatabase(opts: { empty?: boolean } = {}): Promise<string> {
  const base = inject('postgresUrl');
  const name = `${inject('postgresPrefix')}${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = opts.empty ? 'template0' : inject('postgresTemplate');
  for (let attempt = 1; ; attempt++) {
    try {
      await adminQuery(base, `CREATE DATABASE "${name}" TEMPLATE "${template}"`);
      return withDatabase(base, name);
    } catch (err) {
      // The template's last connection may still be closing (55006: object in use).
      if ((err as { code?: string }).code !== '55006' || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Drops every database whose name starts with `prefix` (the run's own). */
export async function dropDatabases(url: string, prefix: string): Promise<void> {
  const { rows } = await adminQuery(url, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, [prefix]);
  for (const { datname } of rows as Array<{ datname: string }>) await adminQuery(url, `DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
}
