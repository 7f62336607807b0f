import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from './migrations.js';

/**
 * Opens the embedded store: WAL so several processes on one host can share the file (one writer
 * at a time, readers never blocked), and a busy timeout so a writer waits instead of failing.
 */
export function openSqlite(path: string): Database.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    db.pragma('busy_timeout = 10000');
    migrate(db); // first: a ledger from a newer goal-loop is refused before anything changes it
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}
