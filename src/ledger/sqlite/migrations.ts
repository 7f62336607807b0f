import type Database from 'better-sqlite3';
import { migrationsIn, pendingMigrations } from '../sql/migrations.js';

/** The schema history (sql/migrations.ts) in SQLite's SQL. */
export const SQLITE_MIGRATIONS: readonly string[] = migrationsIn('sqlite');

/** Applies pending migrations inside one transaction each; the version lives in `user_version`. */
export function migrate(db: Database.Database): number {
  for (const [version, text] of pendingMigrations(db.pragma('user_version', { simple: true }) as number, SQLITE_MIGRATIONS)) {
    db.transaction(() => {
      db.exec(text);
      db.pragma(`user_version = ${version}`);
    })();
  }
  return SQLITE_MIGRATIONS.length;
}
