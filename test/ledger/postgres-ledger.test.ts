import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/ledger/open-ledger.js';
import { POSTGRES_MIGRATIONS } from '../../src/ledger/postgres/migrations.js';
import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import { PostgresLedger } from '../../src/ledger/postgres/postgres-ledger.js';
import { migrate, SQLITE_MIGRATIONS } from '../../src/ledger/sqlite/migrations.js';
import { describeLedgerContract, key, spec } from '../helpers/ledger-contract.js';
import { adminQuery, freshDatabase } from '../helpers/postgres.js';

let contractUrl = '';
describeLedgerContract(
  'PostgreSQL',
  async () => {
    contractUrl = await freshDatabase({ empty: true });
    return PostgresLedger.open(contractUrl);
  },
  async () => PostgresLedger.open(contractUrl),
);

const versions = async (url: string) => (await adminQuery(url, 'SELECT version FROM goal_loop.schema_version ORDER BY version')).rows.map((r: { version: number }) => r.version);

/** Table → sorted column names, for comparing the two schema histories. */
async function postgresColumns(url: string): Promise<Record<string, string[]>> {
  const { rows } = await adminQuery(url, `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'goal_loop' AND table_name <> 'schema_version' ORDER BY 1, 2`);
  const out: Record<string, string[]> = {};
  for (const r of rows as Array<{ table_name: string; column_name: string }>) {
    const columns = out[r.table_name] ?? [];
    out[r.table_name] = columns;
    columns.push(r.column_name);
  }
  return out;
}

function sqliteColumns(): Record<string, string[]> {
  const db = new Database(':memory:');
  try {
    migrate(db);
    // sqlite_sequence is SQLite's own (AUTOINCREMENT's counters).
    const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as Array<{ name: string }>;
    return Object.fromEntries(tables.map(({ name }) => [name, (db.pragma(`table_info(${name})`) as Array<{ name: string }>).map((c) => c.name).sort()]));
  } finally {
    db.close();
  }
}

describe('PostgresLedger: migrations', () => {
  it('records each migration in schema_version, and reopening does not migrate again', async () => {
    const url = await freshDatabase({ empty: true });
    let l = await PostgresLedger.open(url);
    await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    await l.close();
    expect(await versions(url)).toEqual(POSTGRES_MIGRATIONS.map((_, i) => i + 1));
    l = await PostgresLedger.open(url);
    try {
      expect((await l.listTasks(key)).map((t) => t.taskId)).toEqual(['a', 'b', 'c']);
    } finally {
      await l.close();
    }
    expect(await versions(url)).toEqual(POSTGRES_MIGRATIONS.map((_, i) => i + 1));
  });

  it('follows the SQLite history: same versions, tables and columns (the queue table names its pg-boss job)', async () => {
    expect(POSTGRES_MIGRATIONS.length).toBe(SQLITE_MIGRATIONS.length);
    const url = await freshDatabase({ empty: true });
    await (await PostgresLedger.open(url)).close();
    const expected = sqliteColumns();
    expected.goal_jobs = [...expected.goal_jobs!.filter((c) => c !== 'id'), 'job_id'].sort();
    expect(await postgresColumns(url)).toEqual(expected);
  });

  it('refuses a database written by a newer goal-loop, and leaves its data alone', async () => {
    const url = await freshDatabase({ empty: true });
    await adminQuery(
      url,
      `CREATE SCHEMA goal_loop;
       CREATE TABLE goal_loop.schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
       INSERT INTO goal_loop.schema_version (version) VALUES (${POSTGRES_MIGRATIONS.length + 1});
       CREATE TABLE goal_loop.future (x TEXT);
       INSERT INTO goal_loop.future VALUES ('keep me');`,
    );
    await expect(PostgresLedger.open(url)).rejects.toThrow(/newer/);
    expect((await adminQuery(url, 'SELECT x FROM goal_loop.future')).rows).toEqual([{ x: 'keep me' }]);
    expect((await adminQuery(url, `SELECT to_regclass('goal_loop.goals') AS t`)).rows).toEqual([{ t: null }]);
    expect(await versions(url)).toEqual([POSTGRES_MIGRATIONS.length + 1]);
  });

  it('several processes opening an empty database at once all succeed, and it is migrated once', { timeout: 240_000 }, async () => {
    // Six at once, on three fresh databases: before the start-up lock covered pg-boss, two
    // processes creating its queue together deadlocked (40P01) in about one round in three.
    const PROCESSES = 6;
    const ROUNDS = 3;
    // The built store (global setup compiles dist/): ledger migrations and pg-boss's own schema.
    const script = `
      const { openPostgresStore } = await import(${JSON.stringify(resolve('dist/src/ledger/postgres/open-postgres.js'))});
      const store = await openPostgresStore(process.env.DATABASE_URL);
      await store.queue.enqueue({ key: { repo: 'r', goalId: 'g-' + process.pid }, mode: 'run', priority: 'P2' });
      await store.close();
      console.log('ok');`;
    const run = promisify(execFile);
    for (let round = 1; round <= ROUNDS; round++) {
      const url = await freshDatabase({ empty: true });
      const results = await Promise.allSettled(
        Array.from({ length: PROCESSES }, () => run(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, DATABASE_URL: url }, timeout: 60_000 })),
      );
      const outcomes = results.map((r) => (r.status === 'fulfilled' ? r.value.stdout.trim() : String((r.reason as { stderr?: string }).stderr ?? r.reason)));
      expect(outcomes, `round ${round}`).toEqual(Array(PROCESSES).fill('ok'));
      expect(await versions(url)).toEqual(POSTGRES_MIGRATIONS.map((_, i) => i + 1));
      expect((await adminQuery(url, 'SELECT count(*)::int AS n FROM goal_loop.goal_jobs')).rows).toEqual([{ n: PROCESSES }]);
      expect((await adminQuery(url, 'SELECT name FROM pgboss.queue')).rows).toEqual([{ name: 'goal-work' }]);
      expect((await adminQuery(url, `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'goal-work'`)).rows).toEqual([{ n: PROCESSES }]);
    }
  });

  it('opening holds one advisory lock from the migrations until pg-boss has created its queue', async () => {
    const url = await freshDatabase({ empty: true });
    // The key the migrations have always locked: it must not change, or an older process
    // starting during a rolling upgrade would no longer wait.
    const LOCK = `hashtextextended('goal_loop.migrate', 0)`;
    const probe = new pg.Client({ connectionString: url });
    await probe.connect();
    let store: Store | undefined;
    try {
      await probe.query(`SELECT pg_advisory_lock(${LOCK})`);
      let settled = false;
      const opening = openPostgresStore(url).finally(() => {
        settled = true;
      });
      const waiting = async () =>
        (await probe.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`))
          .rows[0].n as number;
      for (let i = 0; (await waiting()) === 0; i++) {
        if (i > 500) throw new Error('openPostgresStore never waited for the start-up lock');
        await new Promise((r) => setTimeout(r, 20));
      }
      // While the lock is held elsewhere, nothing at all is installed.
      expect(settled).toBe(false);
      expect((await probe.query(`SELECT to_regnamespace('goal_loop') AS ledger, to_regnamespace('pgboss') AS boss`)).rows).toEqual([{ ledger: null, boss: null }]);

      // Released, the store takes it; the next time it is free, pg-boss's queue is already there.
      await probe.query(`SELECT pg_advisory_unlock(${LOCK})`);
      let queues: string[] | undefined;
      for (let i = 0; !queues; i++) {
        if (i > 3000) throw new Error('the start-up lock was never released');
        if ((await probe.query(`SELECT pg_try_advisory_lock(${LOCK}) AS got`)).rows[0].got) {
          const exists = (await probe.query(`SELECT to_regclass('pgboss.queue') IS NOT NULL AS e`)).rows[0].e as boolean;
          queues = exists ? (await probe.query('SELECT name FROM pgboss.queue')).rows.map((r: { name: string }) => r.name) : [];
          await probe.query(`SELECT pg_advisory_unlock(${LOCK})`);
        } else {
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      expect(queues).toEqual(['goal-work']);
      store = await opening;
      expect(await versions(url)).toEqual(POSTGRES_MIGRATIONS.map((_, i) => i + 1));
    } finally {
      await store?.close();
      await probe.end();
    }
  });
});
