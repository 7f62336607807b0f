import type pg from 'pg';
import { LEDGER_SCHEMA } from './pool.js';

/**
 * Ordered, append-only, and step for step the same history as SQLITE_MIGRATIONS: entry i moves
 * the schema from version i to i+1 with the same tables, columns and meaning. Only the types are
 * PostgreSQL's own: timestamptz for times, boolean for flags, `json` for documents kept verbatim
 * (spec, delivered events) and `jsonb` for the meta that `setMeta` merges in place.
 */
export const POSTGRES_MIGRATIONS: readonly string[] = [
  `CREATE TABLE goals (
     id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     repo TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     objective TEXT NOT NULL,
     spec_json JSON NOT NULL,
     state TEXT NOT NULL,
     stop_reason TEXT,
     branch TEXT NOT NULL,
     priority TEXT NOT NULL DEFAULT 'P2',
     control TEXT,
     iterations INTEGER NOT NULL DEFAULT 0,
     errors INTEGER NOT NULL DEFAULT 0,
     errors_recovered INTEGER NOT NULL DEFAULT 0,
     input_tokens BIGINT NOT NULL DEFAULT 0,
     output_tokens BIGINT NOT NULL DEFAULT 0,
     cache_read_tokens BIGINT NOT NULL DEFAULT 0,
     cache_write_tokens BIGINT NOT NULL DEFAULT 0,
     cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
     created_at TIMESTAMPTZ NOT NULL,
     updated_at TIMESTAMPTZ NOT NULL,
     UNIQUE (repo, goal_id)
   );
   CREATE TABLE tasks (
     goal BIGINT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     position INTEGER NOT NULL,
     title TEXT NOT NULL,
     status TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     checkpoint_sha TEXT,
     last_error TEXT,
     approved BOOLEAN NOT NULL DEFAULT false,
     updated_at TIMESTAMPTZ NOT NULL,
     PRIMARY KEY (goal, task_id)
   );
   CREATE TABLE attempts (
     id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     goal BIGINT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     phase TEXT NOT NULL,
     passed BOOLEAN NOT NULL,
     exit_code INTEGER,
     output TEXT NOT NULL,
     log_path TEXT,
     duration_ms BIGINT NOT NULL,
     at TIMESTAMPTZ NOT NULL
   );
   CREATE INDEX attempts_by_task ON attempts (goal, task_id, id);
   CREATE TABLE events (
     id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     goal BIGINT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     at TIMESTAMPTZ NOT NULL,
     from_state TEXT,
     to_state TEXT NOT NULL,
     event TEXT NOT NULL,
     detail TEXT
   );
   CREATE INDEX events_by_goal ON events (goal, id);`,
  `ALTER TABLE goals ADD COLUMN meta_json JSONB NOT NULL DEFAULT '{}';
   CREATE TABLE deliveries (
     id TEXT PRIMARY KEY,
     received_at TIMESTAMPTZ NOT NULL
   );`,
  // v3: the inbox, leases, and the queue's pending request per goal. SQLite's goal_jobs is the
  // whole embedded queue; here pg-boss carries the job and goal_jobs keeps what coalesces
  // (see PgBossWorkQueue), with job_id naming the pg-boss job that hands it out.
  `ALTER TABLE deliveries ADD COLUMN event_json JSON;
   ALTER TABLE deliveries ADD COLUMN handled_at TIMESTAMPTZ;
   CREATE INDEX deliveries_unhandled ON deliveries (received_at) WHERE event_json IS NOT NULL AND handled_at IS NULL;
   CREATE TABLE leases (
     name TEXT PRIMARY KEY,
     holder TEXT NOT NULL,
     acquired_at TIMESTAMPTZ NOT NULL,
     heartbeat_at TIMESTAMPTZ NOT NULL,
     expires_at TIMESTAMPTZ NOT NULL
   );
   CREATE TABLE goal_jobs (
     job_id UUID NOT NULL DEFAULT gen_random_uuid() UNIQUE,
     repo TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     mode TEXT NOT NULL,
     priority TEXT NOT NULL,
     enqueued_at TIMESTAMPTZ NOT NULL,
     not_before TIMESTAMPTZ NOT NULL,
     PRIMARY KEY (repo, goal_id)
   );
   CREATE INDEX goal_jobs_order ON goal_jobs (priority, enqueued_at);`,
  // v4: the outbox, effects recorded with the state change that implies them (ports/outbox.ts).
  `CREATE TABLE effects (
     id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     goal BIGINT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     kind TEXT NOT NULL,
     payload_json JSONB NOT NULL,
     created_at TIMESTAMPTZ NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     last_error TEXT,
     claimed_by TEXT,
     claimed_until TIMESTAMPTZ NOT NULL DEFAULT 'epoch',
     done_at TIMESTAMPTZ
   );
   CREATE INDEX effects_pending ON effects (goal, id) WHERE done_at IS NULL;`,
  // v5: the attempt record, written as each attempt goes (ports/attempt-log.ts).
  `CREATE TABLE attempt_entries (
     seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     goal BIGINT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     at TIMESTAMPTZ NOT NULL,
     entry_json JSONB NOT NULL
   );
   CREATE INDEX attempt_entries_by_goal ON attempt_entries (goal, seq);`,
  // v6: an effect given up after its last try is kept as such (ports/outbox.ts giveUpEffect).
  `ALTER TABLE effects ADD COLUMN given_up_at TIMESTAMPTZ;
   CREATE INDEX effects_given_up ON effects (goal, id) WHERE given_up_at IS NOT NULL;`,
];

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
  const current = rows[0]!.v;
  if (current > POSTGRES_MIGRATIONS.length) {
    throw new Error(`ledger schema version ${current} is newer than this goal-loop (${POSTGRES_MIGRATIONS.length}); upgrade goal-loop`);
  }
  for (let v = current; v < POSTGRES_MIGRATIONS.length; v++) {
    await client.query('BEGIN');
    try {
      await client.query(POSTGRES_MIGRATIONS[v]!);
      await client.query(`INSERT INTO ${LEDGER_SCHEMA}.schema_version (version) VALUES ($1)`, [v + 1]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK');
      throw err;
    }
  }
  return POSTGRES_MIGRATIONS.length;
}
