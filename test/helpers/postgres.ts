import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import { adminQuery, startThrowawayCluster, stopThrowawayCluster, TEST_DATABASE_ENV, withDatabase } from './postgres-cluster.js';
import { withLock } from './run-lock.js';

export { adminQuery, type Cluster, postgresBinDir, startThrowawayCluster, TEST_DATABASE_ENV, withDatabase } from './postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A directory of this test run (test/global-setup.ts), shared by its workers, removed at the end. */
    testRunDir: string;
  }
}

/** The run's PostgreSQL server, as the first worker that needed it recorded it in the run directory. */
interface TestPostgres {
  /** A database on the server whose role may create databases. */
  url: string;
  /** A database already migrated (ledger + pg-boss), to copy for each fresh store. */
  template: string;
  /** Prefix of every database this run creates, dropped at teardown. */
  prefix: string;
  /** The throwaway cluster's directory, when the run started one (no GOAL_LOOP_TEST_DATABASE_URL). */
  clusterDir?: string;
}

const stateFile = (runDir: string) => join(runDir, 'postgres.json');

/**
 * The server, started on first use in the run and shared by its workers: `GOAL_LOOP_TEST_DATABASE_URL`
 * (a role that may create databases), else a throwaway cluster. Its template database is migrated
 * once. A run whose tests never ask for a database starts nothing.
 */
async function startPostgres(runDir: string): Promise<TestPostgres> {
  return withLock(join(runDir, 'postgres.lock'), async () => {
    if (existsSync(stateFile(runDir))) {
      const state = JSON.parse(readFileSync(stateFile(runDir), 'utf8')) as TestPostgres & { error?: string };
      if (state.error) throw new Error(`PostgreSQL for the tests failed to start earlier in this run: ${state.error}`);
      return state;
    }
    const prefix = `goal_loop_t${randomBytes(3).toString('hex')}_`;
    const state: TestPostgres = { url: process.env[TEST_DATABASE_ENV] ?? '', template: `${prefix}template`, prefix };
    try {
      if (!state.url) {
        const cluster = await startThrowawayCluster();
        state.url = cluster.url;
        state.clusterDir = cluster.dir;
        // Recorded at once so that the run's teardown stops it even if the template fails.
        writeFileSync(stateFile(runDir), JSON.stringify({ ...state, error: 'starting' }));
      }
      await adminQuery(state.url, `CREATE DATABASE "${state.template}" TEMPLATE template0`);
      const store = await openPostgresStore(withDatabase(state.url, state.template));
      await store.close();
    } catch (err) {
      writeFileSync(stateFile(runDir), JSON.stringify({ ...state, error: (err as Error).stack ?? String(err) }));
      throw err;
    }
    writeFileSync(stateFile(runDir), JSON.stringify(state));
    return state;
  });
}

let server: Promise<TestPostgres> | undefined;
const testPostgres = () => (server ??= startPostgres(inject('testRunDir')));

/**
 * A new database of its own, dropped when the run ends: a copy of the migrated template (ledger
 * and pg-boss installed), or an empty one for tests of the migrations themselves.
 */
export async function freshDatabase(opts: { empty?: boolean } = {}): Promise<string> {
  const { url: base, prefix, template: migrated } = await testPostgres();
  const name = `${prefix}${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = opts.empty ? 'template0' : migrated;
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
  const { rows } = await adminQuery(url, 'SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix]);
  for (const { datname } of rows as Array<{ datname: string }>) await adminQuery(url, `DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
}

/** At the run's end (global setup's teardown): stops the cluster, or drops the run's databases. */
export async function stopTestPostgres(runDir: string): Promise<void> {
  if (!existsSync(stateFile(runDir))) return;
  const state = JSON.parse(readFileSync(stateFile(runDir), 'utf8')) as TestPostgres;
  if (state.clusterDir) stopThrowawayCluster(state.clusterDir);
  else if (state.url) await dropDatabases(state.url, state.prefix);
}
