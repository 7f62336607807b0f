import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { openPostgresStore } from '../src/ledger/postgres/open-postgres.js';
import { adminQuery, dropDatabases, startThrowawayCluster, TEST_DATABASE_ENV, withDatabase, type Cluster } from './helpers/postgres.js';

/**
 * CLI tests run the built `goal-loop` binary as a real process: build it once, fresh.
 * PostgreSQL tests get a server: `GOAL_LOOP_TEST_DATABASE_URL` (a role that may create
 * databases), else a throwaway cluster started here. Each test copies a migrated template into a
 * database of its own; all of them are dropped (or the cluster removed) at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });

  let cluster: Cluster | undefined;
  const url = process.env[TEST_DATABASE_ENV] || (cluster = await startThrowawayCluster()).url;
  const prefix = `goal_loop_t${randomBytes(3).toString('hex')}_`;
  const template = `${prefix}template`;
  const teardown = async () => {
    if (cluster) cluster.stop();
    else await dropDatabases(url, prefix);
  };
  try {
    await adminQuery(url, `CREATE DATABASE "${template}" TEMPLATE template0`);
    const store = await openPostgresStore(withDatabase(url, template));
    await store.close();
  } catch (err) {
    await teardown().catch(() => undefined);
    throw err;
  }
  project.provide('postgresUrl', url);
  project.provide('postgresTemplate', template);
  project.provide('postgresPrefix', prefix);
  return teardown;
}
