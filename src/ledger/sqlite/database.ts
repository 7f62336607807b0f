import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { makeDirs } from '../../common/make-dirs.js';
import { LedgerOpenError } from '../../ports/ledger.js';
import { migrate } from './migrations.js';

/**
 * Opens the embedded store: WAL so several processes on one host can share the file (one writer
 * at a time, readers never blocked), and a busy timeout so a writer waits instead of failing.
 */
export function openSqlite(path: string): Database.Database {
  if (path !== ':memory:') {
    try {
      makeDirs(dirname(path));
    } catch (err) {
      throw new LedgerOpenError(path, `cannot create its directory ${dirname(path)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }
  let db: Database.Database;
  try {
    db = new Database(path);
  } catch (err) {
    throw new LedgerOpenError(path, (err as Error).message);
  }
  try {
    db.pragma('busy_timeout = 10000');
    migrate(db); // first: a ledger from a newer goal-loop is refused before anything changes it
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
  } catch (err) {
    db.close();
    // A garbage file, a newer schema, a read-only place: the user's to fix, named in one line.
    throw new LedgerOpenError(path, (err as Error).message);
  }
  return db;
}
