import pg from 'pg';

/** Our tables live in their own schema, apart from pg-boss's (`pgboss`) and anyone else's. */
export const LEDGER_SCHEMA = 'goal_loop';

const parseTimestamp = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ);
const asText = (value: string) => value;

/**
 * Rows come back shaped like the SQLite ones, so both stores share one row→record mapping:
 * timestamps as ISO 8601 text, JSON as its text, and bigint as a number (ids and counters stay
 * far below 2^53).
 */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    switch (oid) {
      case pg.types.builtins.INT8:
        return Number;
      case pg.types.builtins.TIMESTAMPTZ:
        return (value: string) => (parseTimestamp(value) as Date).toISOString();
      case pg.types.builtins.JSON:
      case pg.types.builtins.JSONB:
        return asText;
      default:
        return pg.types.getTypeParser(oid, format);
    }
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * A pool on `url` whose connections resolve unqualified names in the ledger's schema. Small by
 * default: every serve/worker process holds one, and statements are short.
 */
export function createPool(url: string, max = 5): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types,
    application_name: 'goal-loop',
    // A half-open connection must fail a heartbeat, not hang it past the lease.
    connectionTimeoutMillis: 10_000,
    query_timeout: 30_000,
    onConnect: async (client) => {
      await client.query(`SET search_path TO ${LEDGER_SCHEMA}`);
    },
  });
  // An idle connection the server dropped (restart, failover) is replaced on next use; the query
  // that needs it reports any lasting outage. Unhandled, this event would end the process.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `fn` in one transaction on one connection: committed when it returns, rolled back when it throws. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A checked-out client has no pool listener: a server that goes away mid-transaction would
  // otherwise raise an uncaught 'error' and end the process. The failing query reports it.
  const ignore = () => undefined;
  client.on('error', ignore);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.off('error', ignore);
    client.release();
  }
}
