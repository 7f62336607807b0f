import type pg from 'pg';
import { type Program, runAsync, type SqlDriver, type Step } from '../sql/program.js';
import { SqlLedger } from '../sql/sql-ledger.js';
import { render } from '../sql/statement.js';
import { migratePostgres } from './migrations.js';
import { createPool, withTransaction } from './pool.js';

/** Runs programs on a pool: each statement on its own, or all of a transaction on one connection. */
class PostgresDriver implements SqlDriver {
  constructor(private readonly pool: pg.Pool) {}

  async run<T>(program: Program<T>): Promise<T> {
    return runAsync(program, (step) => execute(this.pool, step));
  }

  async transaction<T>(program: Program<T>): Promise<T> {
    return withTransaction(this.pool, (client) => runAsync(program, (step) => execute(client, step)));
  }

  async close(): Promise<void> {
    if (!this.pool.ended) await this.pool.end();
  }
}

async function execute(db: pg.Pool | pg.PoolClient, { statement, want }: Step): Promise<unknown> {
  const { text, params } = render(statement, 'postgres');
  const result = await db.query(text, params);
  return want === 'rows' ? result.rows : (result.rowCount ?? 0);
}

/**
 * The scale-out ledger: PostgreSQL shared by any number of processes on any number of machines.
 * Every write that reads before it writes is one statement or one transaction with the goal row
 * locked, and times come from the database's clock.
 */
export class PostgresLedger extends SqlLedger {
  /** Shares an already migrated pool (see `open`); `close` ends it. */
  constructor(pool: pg.Pool) {
    super(new PostgresDriver(pool));
  }

  /** Connects to `url` and migrates the schema. */
  static async open(url: string): Promise<PostgresLedger> {
    const pool = createPool(url);
    try {
      await migratePostgres(pool);
    } catch (err) {
      await pool.end();
      throw err;
    }
    return new PostgresLedger(pool);
  }
}
