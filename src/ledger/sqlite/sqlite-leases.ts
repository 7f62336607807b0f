import type Database from 'better-sqlite3';
import type { LeaseRecord } from '../../ports/leases.js';

interface LeaseRow {
  name: string;
  holder: string;
  acquired_at: number;
  heartbeat_at: number;
  expires_at: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Leases in the embedded store. Every statement is a single atomic write, so processes that
 * share the file never both hold a lease; time is this host's clock (one host shares a file).
 */
export class SqliteLeases {
  constructor(private readonly db: Database.Database) {}

  acquire(name: string, holder: string, ttlMs: number): boolean {
    const at = Date.now();
    const info = this.db
      .prepare(
        `INSERT INTO leases (name, holder, acquired_at, heartbeat_at, expires_at) VALUES (@name, @holder, @at, @at, @exp)
         ON CONFLICT (name) DO UPDATE SET
           acquired_at = CASE WHEN leases.holder = excluded.holder THEN leases.acquired_at ELSE excluded.acquired_at END,
           holder = excluded.holder, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
         WHERE leases.holder = excluded.holder OR leases.expires_at <= @at`,
      )
      .run({ name, holder, at, exp: at + ttlMs });
    return info.changes === 1;
  }

  renew(name: string, holder: string, ttlMs: number): boolean {
    const at = Date.now();
    // An expired lease nobody took is still ours: no one else can have worked in between.
    const info = this.db.prepare('UPDATE leases SET heartbeat_at = ?, expires_at = ? WHERE name = ? AND holder = ?').run(at, at + ttlMs, name, holder);
    return info.changes === 1;
  }

  release(name: string, holder: string): void {
    this.db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?').run(name, holder);
  }

  list(): LeaseRecord[] {
    const at = Date.now();
    return (this.db.prepare('SELECT * FROM leases ORDER BY name').all() as LeaseRow[]).map((r) => ({
      name: r.name,
      holder: r.holder,
      acquiredAt: iso(r.acquired_at),
      heartbeatAt: iso(r.heartbeat_at),
      expiresAt: iso(r.expires_at),
      live: r.expires_at > at,
    }));
  }
}
