import { type Dialect, dialectSql, renderDdl, type Sql, sql } from './statement.js';

/**
 * The ledger's schema history, written once for both stores. Ordered, append-only: entry i moves
 * the schema from version i to i+1, with the same tables, columns and meaning in SQLite and
 * PostgreSQL. Only the types differ (below), and the queue's table (v3).
 */

/** A row id. */
const ID = dialectSql('INTEGER PRIMARY KEY', 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY');
/** A row id never reused, even after the row is deleted. */
const SERIAL = dialectSql('INTEGER PRIMARY KEY AUTOINCREMENT', 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY');
/** The goal a row belongs to (goals.id). */
const GOAL = dialectSql('INTEGER', 'BIGINT');
/** A count or a length that may pass 2^31 (tokens, milliseconds). */
const BIG = dialectSql('INTEGER', 'BIGINT');
const REAL = dialectSql('REAL', 'DOUBLE PRECISION');
const FLAG = dialectSql('INTEGER', 'BOOLEAN');
const FALSE = dialectSql('0', 'false');
/** A time: ISO 8601 text in SQLite (statement.ts isoTime). */
const TIME = dialectSql('TEXT', 'TIMESTAMPTZ');
/** A time: epoch milliseconds in SQLite (statement.ts epochTime), compared and added to. */
const EPOCH = dialectSql('INTEGER', 'TIMESTAMPTZ');
const EPOCH_ZERO = dialectSql('0', "'epoch'");
/** A document kept verbatim (spec, a delivered event). */
const DOC = dialectSql('TEXT', 'JSON');
/** A document PostgreSQL keeps as jsonb (meta, payloads, attempt entries). */
const JSONB = dialectSql('TEXT', 'JSONB');

export const MIGRATIONS: readonly Sql[] = [
  sql`CREATE TABLE goals (
     id ${ID},
     repo TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     objective TEXT NOT NULL,
     spec_json ${DOC} NOT NULL,
     state TEXT NOT NULL,
     stop_reason TEXT,
     branch TEXT NOT NULL,
     priority TEXT NOT NULL DEFAULT 'P2',
     control TEXT,
     iterations INTEGER NOT NULL DEFAULT 0,
     errors INTEGER NOT NULL DEFAULT 0,
     errors_recovered INTEGER NOT NULL DEFAULT 0,
     input_tokens ${BIG} NOT NULL DEFAULT 0,
     output_tokens ${BIG} NOT NULL DEFAULT 0,
     cache_read_tokens ${BIG} NOT NULL DEFAULT 0,
     cache_write_tokens ${BIG} NOT NULL DEFAULT 0,
     cost_usd ${REAL} NOT NULL DEFAULT 0,
     created_at ${TIME} NOT NULL,
     updated_at ${TIME} NOT NULL,
     UNIQUE (repo, goal_id)
   );
   CREATE TABLE tasks (
     goal ${GOAL} NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     position INTEGER NOT NULL,
     title TEXT NOT NULL,
     status TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     checkpoint_sha TEXT,
     last_error TEXT,
     approved ${FLAG} NOT NULL DEFAULT ${FALSE},
     updated_at ${TIME} NOT NULL,
     PRIMARY KEY (goal, task_id)
   );
   CREATE TABLE attempts (
     id ${ID},
     goal ${GOAL} NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     phase TEXT NOT NULL,
     passed ${FLAG} NOT NULL,
     exit_code INTEGER,
     output TEXT NOT NULL,
     log_path TEXT,
     duration_ms ${BIG} NOT NULL,
     at ${TIME} NOT NULL
   );
   CREATE INDEX attempts_by_task ON attempts (goal, task_id, id);
   CREATE TABLE events (
     id ${ID},
     goal ${GOAL} NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     at ${TIME} NOT NULL,
     from_state TEXT,
     to_state TEXT NOT NULL,
     event TEXT NOT NULL,
     detail TEXT
   );
   CREATE INDEX events_by_goal ON events (goal, id);`,
  sql`ALTER TABLE goals ADD COLUMN meta_json ${JSONB} NOT NULL DEFAULT '{}';
   CREATE TABLE deliveries (
     id TEXT PRIMARY KEY,
     received_at ${TIME} NOT NULL
   );`,
  // v3: the inbox (a delivery's event until it is handled), leases, and the queue's pending
  // request per goal. In SQLite goal_jobs is the whole embedded queue; in PostgreSQL pg-boss
  // carries the job and goal_jobs keeps what coalesces (see PgBossWorkQueue), with job_id naming
  // the pg-boss job that hands it out.
  sql`ALTER TABLE deliveries ADD COLUMN event_json ${DOC};
   ALTER TABLE deliveries ADD COLUMN handled_at ${TIME};
   CREATE INDEX deliveries_unhandled ON deliveries (received_at) WHERE event_json IS NOT NULL AND handled_at IS NULL;
   CREATE TABLE leases (
     name TEXT PRIMARY KEY,
     holder TEXT NOT NULL,
     acquired_at ${EPOCH} NOT NULL,
     heartbeat_at ${EPOCH} NOT NULL,
     expires_at ${EPOCH} NOT NULL
   );
   CREATE TABLE goal_jobs (
     ${dialectSql('id INTEGER PRIMARY KEY,', 'job_id UUID NOT NULL DEFAULT gen_random_uuid() UNIQUE,')}
     repo TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     mode TEXT NOT NULL,
     priority TEXT NOT NULL,
     enqueued_at ${EPOCH} NOT NULL,
     not_before ${EPOCH} NOT NULL,
     ${dialectSql('UNIQUE (repo, goal_id)', 'PRIMARY KEY (repo, goal_id)')}
   );
   CREATE INDEX goal_jobs_order ON goal_jobs (priority, enqueued_at);`,
  // v4: the outbox, effects recorded with the state change that implies them (ports/outbox.ts).
  sql`CREATE TABLE effects (
     id ${SERIAL},
     goal ${GOAL} NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     kind TEXT NOT NULL,
     payload_json ${JSONB} NOT NULL,
     created_at ${EPOCH} NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     last_error TEXT,
     claimed_by TEXT,
     claimed_until ${EPOCH} NOT NULL DEFAULT ${EPOCH_ZERO},
     done_at ${EPOCH}
   );
   CREATE INDEX effects_pending ON effects (goal, id) WHERE done_at IS NULL;`,
  // v5: the attempt record, written as each attempt goes (ports/attempt-log.ts).
  sql`CREATE TABLE attempt_entries (
     seq ${SERIAL},
     goal ${GOAL} NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     at ${TIME} NOT NULL,
     entry_json ${JSONB} NOT NULL
   );
   CREATE INDEX attempt_entries_by_goal ON attempt_entries (goal, seq);`,
  // v6: an effect given up after its last try is kept as such (ports/outbox.ts giveUpEffect).
  sql`ALTER TABLE effects ADD COLUMN given_up_at ${EPOCH};
   CREATE INDEX effects_given_up ON effects (goal, id) WHERE given_up_at IS NOT NULL;`,
  // v7: the write budget per GitHub installation (ports/write-budget.ts): its pause, and the row a
  // decision locks; the writes of its longest window, older ones dropped as it goes.
  sql`CREATE TABLE write_budgets (
     installation TEXT PRIMARY KEY,
     paused_until ${EPOCH} NOT NULL DEFAULT ${EPOCH_ZERO}
   );
   CREATE TABLE write_events (
     id ${ID},
     installation TEXT NOT NULL,
     at ${EPOCH} NOT NULL
   );
   CREATE INDEX write_events_by_installation ON write_events (installation, at);`,
];

/** The history in `dialect`'s SQL. */
export const migrationsIn = (dialect: Dialect): readonly string[] => MIGRATIONS.map((m) => renderDdl(m, dialect));

/**
 * The migrations a schema at version `current` still needs, as [version reached, SQL]; a schema
 * newer than this code is refused before anything is changed.
 */
export function pendingMigrations(current: number, migrations: readonly string[]): [number, string][] {
  if (current > migrations.length) {
    throw new Error(`ledger schema version ${current} is newer than this goal-loop (${migrations.length}); upgrade goal-loop`);
  }
  return migrations.slice(current).map((text, i) => [current + i + 1, text]);
}
