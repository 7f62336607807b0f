import type Database from 'better-sqlite3';

/** Ordered, append-only. Each entry moves the schema from version i to i+1. */
export const SQLITE_MIGRATIONS: readonly string[] = [
  `CREATE TABLE goals (
     id INTEGER PRIMARY KEY,
     repo TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     objective TEXT NOT NULL,
     spec_json TEXT NOT NULL,
     state TEXT NOT NULL,
     stop_reason TEXT,
     branch TEXT NOT NULL,
     priority TEXT NOT NULL DEFAULT 'P2',
     control TEXT,
     iterations INTEGER NOT NULL DEFAULT 0,
     errors INTEGER NOT NULL DEFAULT 0,
     errors_recovered INTEGER NOT NULL DEFAULT 0,
     input_tokens INTEGER NOT NULL DEFAULT 0,
     output_tokens INTEGER NOT NULL DEFAULT 0,
     cache_read_tokens INTEGER NOT NULL DEFAULT 0,
     cache_write_tokens INTEGER NOT NULL DEFAULT 0,
     cost_usd REAL NOT NULL DEFAULT 0,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     UNIQUE (repo, goal_id)
   );
   CREATE TABLE tasks (
     goal INTEGER NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     position INTEGER NOT NULL,
     title TEXT NOT NULL,
     status TEXT NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     checkpoint_sha TEXT,
     last_error TEXT,
     approved INTEGER NOT NULL DEFAULT 0,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (goal, task_id)
   );
   CREATE TABLE attempts (
     id INTEGER PRIMARY KEY,
     goal INTEGER NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     phase TEXT NOT NULL,
     passed INTEGER NOT NULL,
     exit_code INTEGER,
     output TEXT NOT NULL,
     log_path TEXT,
     duration_ms INTEGER NOT NULL,
     at TEXT NOT NULL
   );
   CREATE INDEX attempts_by_task ON attempts (goal, task_id, id);
   CREATE TABLE events (
     id INTEGER PRIMARY KEY,
     goal INTEGER NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     at TEXT NOT NULL,
     from_state TEXT,
     to_state TEXT NOT NULL,
     event TEXT NOT NULL,
     detail TEXT
   );
   CREATE INDEX events_by_goal ON events (goal, id);`,
  `ALTER TABLE goals ADD COLUMN meta_json TEXT NOT NULL DEFAULT '{}';
   CREATE TABLE deliveries (
     id TEXT PRIMARY KEY,
     received_at TEXT NOT NULL
   );`,
  // v3: the inbox (a delivery's event until it is handled), leases, and the embedded work queue.
  `ALTER TABLE deliveries ADD COLUMN event_json TEXT;
   ALTER TABLE deliveries ADD COLUMN handled_at TEXT;
   CREATE INDEX deliveries_unhandled ON deliveries (received_at) WHERE event_json IS NOT NULL AND handled_at IS NULL;
   CREATE TABLE leases (
     name TEXT PRIMARY KEY,
     holder TEXT NOT NULL,
     acquired_at INTEGER NOT NULL,
     heartbeat_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL
   );
   CREATE TABLE goal_jobs (
     id INTEGER PRIMARY KEY,
     repo TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     mode TEXT NOT NULL,
     priority TEXT NOT NULL,
     enqueued_at INTEGER NOT NULL,
     not_before INTEGER NOT NULL,
     UNIQUE (repo, goal_id)
   );
   CREATE INDEX goal_jobs_order ON goal_jobs (priority, enqueued_at);`,
  // v4: the outbox, effects recorded with the state change that implies them (ports/outbox.ts).
  `CREATE TABLE effects (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     goal INTEGER NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     kind TEXT NOT NULL,
     payload_json TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     last_error TEXT,
     claimed_by TEXT,
     claimed_until INTEGER NOT NULL DEFAULT 0,
     done_at INTEGER
   );
   CREATE INDEX effects_pending ON effects (goal, id) WHERE done_at IS NULL;`,
  // v5: the attempt record, written as each attempt goes (ports/attempt-log.ts).
  `CREATE TABLE attempt_entries (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     goal INTEGER NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
     task_id TEXT NOT NULL,
     attempt INTEGER NOT NULL,
     at TEXT NOT NULL,
     entry_json TEXT NOT NULL
   );
   CREATE INDEX attempt_entries_by_goal ON attempt_entries (goal, seq);`,
  // v6: an effect given up after its last try is kept as such (ports/outbox.ts giveUpEffect).
  `ALTER TABLE effects ADD COLUMN given_up_at INTEGER;
   CREATE INDEX effects_given_up ON effects (goal, id) WHERE given_up_at IS NOT NULL;`,
];

/** Applies pending migrations inside one transaction each; the version lives in `user_version`. */
export function migrate(db: Database.Database): number {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SQLITE_MIGRATIONS.length) {
    throw new Error(`ledger schema version ${current} is newer than this goal-loop (${SQLITE_MIGRATIONS.length}); upgrade goal-loop`);
  }
  for (let v = current; v < SQLITE_MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(SQLITE_MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
  return SQLITE_MIGRATIONS.length;
}
