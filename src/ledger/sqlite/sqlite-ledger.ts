import type Database from 'better-sqlite3';
import { type Program, runSync, type SqlDriver, type Step } from '../sql/program.js';
import { SqlLedger } from '../sql/sql-ledger.js';
import { render } from '../sql/statement.js';
import { openSqlite } from './database.js';

/** Prepared statements kept per database; the texts are the code's own, so few (a list's length varies: hence a bound). */
const MAX_PREPARED = 256;

/** Runs programs on a better-sqlite3 database, synchronously: nothing else in the process runs in between. */
class SqliteDriver implements SqlDriver {
  /**
   * Compiling a statement cost more than running it (about 0.1 ms of a webhook's inbox write, on
   * the acknowledgement path): each text is prepared once. SQLite re-prepares one itself after a
   * schema change.
   */
  private readonly prepared = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  async run<T>(program: Program<T>): Promise<T> {
    return runSync(program, this.execute);
  }

  async transaction<T>(program: Program<T>): Promise<T> {
    // IMMEDIATE: it reads, then writes; a deferred one would fail at once if another process wrote between.
    return this.db.transaction(() => runSync(program, this.execute)).immediate();
  }

  async close(): Promise<void> {
    this.db.close();
  }

  private statement(text: string): Database.Statement {
    let found = this.prepared.get(text);
    if (!found) {
      if (this.prepared.size >= MAX_PREPARED) this.prepared.clear();
      found = this.db.prepare(text);
      this.prepared.set(text, found);
    }
    return found;
  }

  private readonly execute = ({ statement, want }: Step): unknown => {
    const { text, params } = render(statement, 'sqlite');
    const prepared = this.statement(text);
    return want === 'rows' ? prepared.all(...params) : prepared.run(...params).changes;
  };
}

/** The embedded ledger: one SQLite file, WAL mode, safe for one writer process at a time. */
export class SqliteLedger extends SqlLedger {
  /** Opens (and migrates) the file at `path`, or shares an already opened database. */
  constructor(pathOrDb: string | Database.Database) {
    super(new SqliteDriver(typeof pathOrDb === 'string' ? openSqlite(pathOrDb) : pathOrDb));
  }
}
