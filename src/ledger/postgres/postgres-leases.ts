import type pg from 'pg';
import type { LeaseRecord } from '../../ports/leases.js';

interface LeaseRow {
  name: string;
  holder: string;
  acquired_at: string;
  heartbeat_at: string;
  expires_at: string;
  live: boolean;
}

/**
 * Leases in PostgreSQL. Each operation is one atomic statement, and time is the database's
 * clock (clock_timestamp()), not the callers': workers on many machines must agree on expiry.
 */
export class PostgresLeases {
  constructor(private readonly pool: pg.Pool) {}

  async acquire(name: string, holder: string, ttlMs: number): Promise<boolean> {
    // Racing inserts of a new name serialize on the key; the loser sees a live lease and skips.
    const { rowCount } = await this.pool.query(
      `INSERT INTO leases AS l (name, holder, acquired_at, heartbeat_at, expires_at)
       VALUES ($1, $2, clock_timestamp(), clock_timestamp(), clock_timestamp() + $3 * interval '1 millisecond')
       ON CONFLICT (name) DO UPDATE SET
         acquired_at = CASE WHEN l.holder = excluded.holder THEN l.acquired_at ELSE excluded.acquired_at END,
         holder = excluded.holder, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
       WHERE l.holder = excluded.holder OR l.expires_at <= clock_timestamp()`,
      [name, holder, ttlMs],
    );
    return rowCount === 1;
  }

  async renew(name: string, holder: string, ttlMs: number): Promise<boolean> {
    // An expired lease nobody took is still ours: no one else can have worked in between.
    const { rowCount } = await this.pool.query(
      `UPDATE leases SET heartbeat_at = clock_timestamp(), expires_at = clock_timestamp() + $3 * interval '1 millisecond'
       WHERE name = $1 AND holder = $2`,
      [name, holder, ttlMs],
    );
    return rowCount === 1;
  }

  async release(name: string, holder: string): Promise<void> {
    await this.pool.query('DELETE FROM leases WHERE name = $1 AND holder = $2', [name, holder]);
  }

  async list(): Promise<LeaseRecord[]> {
    const { rows } = await this.pool.query<LeaseRow>('SELECT *, expires_at > clock_timestamp() AS live FROM leases ORDER BY name COLLATE "C"');
    return rows.map((r) => ({ name: r.name, holder: r.holder, acquiredAt: r.acquired_at, heartbeatAt: r.heartbeat_at, expiresAt: r.expires_at, live: r.live }));
  }
}
