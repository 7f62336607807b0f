import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/ledger/open-ledger.js';
import { redactUrl } from '../../src/ledger/postgres/open-postgres.js';
import { key, spec } from '../helpers/ledger-contract.js';
import { freshDatabase } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp.js';

describe('openStore', () => {
  it('opens the SQLite file at GOAL_LOOP_DB without DATABASE_URL', async () => {
    const path = join(await tempDir(), 'store', 'ledger.db');
    const store = await openStore({ GOAL_LOOP_DB: path });
    try {
      expect(store).toMatchObject({ kind: 'sqlite', location: path });
      await store.ledger.upsertGoal(key, { spec: spec(), branch: 'b' });
    } finally {
      await store.close();
    }
    expect(existsSync(path)).toBe(true);
  });

  it('opens PostgreSQL (ledger and pg-boss queue) for a postgres:// DATABASE_URL, and names it without the password', async () => {
    const url = await freshDatabase();
    expect(new URL(url).password).not.toBe('');
    const store = await openStore({ DATABASE_URL: url, GOAL_LOOP_DB: '/nonexistent/ledger.db' });
    try {
      expect(store.kind).toBe('postgres');
      expect(store.location).toBe(redactUrl(url));
      expect(new URL(store.location).password).toBe('');
      await store.ledger.upsertGoal(key, { spec: spec(), branch: 'b', priority: 'P1' });
      await store.queue.enqueue({ key, mode: 'run', priority: 'P1' });
      expect((await store.queue.claim())?.key).toEqual(key);
    } finally {
      await store.close();
    }
  });

  it('refuses a DATABASE_URL that is not PostgreSQL', async () => {
    await expect(openStore({ DATABASE_URL: 'mysql://u:p@host/db' })).rejects.toThrow(/postgres/);
  });

  it('redacts the password wherever the URL carries it', () => {
    expect(redactUrl('postgres://me:s3cret@db.example:5432/goals')).toBe('postgres://me@db.example:5432/goals');
    expect(redactUrl('postgresql://db.example/goals?password=s3cret&sslmode=require')).toBe('postgresql://db.example/goals?sslmode=require');
  });
});
