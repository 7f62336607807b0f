import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { POSTGRES_MIGRATIONS } from '../../src/ledger/postgres/migrations.js';
import { pendingMigrations } from '../../src/ledger/sql/migrations.js';
import { SQLITE_MIGRATIONS } from '../../src/ledger/sqlite/migrations.js';

/** A released migration's SQL, whitespace aside, fingerprinted. */
const fingerprint = (text: string) => createHash('sha256').update(text.replace(/\s+/g, ' ').trim()).digest('hex').slice(0, 16);

describe('the schema history (written once in sql/migrations.ts)', () => {
  // Databases at every released version exist: a released step that changed would give a new
  // database another schema than an old one migrated. Add a version; never edit one.
  it('renders the released steps exactly as they were released, in both dialects', () => {
    expect(SQLITE_MIGRATIONS.slice(0, 6).map(fingerprint)).toEqual(['b1ed3fd0b4b7108e', 'f3a91dc78867f8ce', '907d4f9256a1fb5b', '39e196ebc1494471', 'b7285de5a6fe4f4e', '2ec19b7b234b47b3']);
    expect(POSTGRES_MIGRATIONS.slice(0, 6).map(fingerprint)).toEqual(['1df7c0a0f93cce7a', '0f42e09333ff3c8d', 'bfd1a9d12e2dbc80', 'd3c80f64a1d163bd', '492cee2ac12e1d27', '07a66c2bc406d84f']);
  });

  it('gives a schema the steps it lacks, numbered by the version each reaches, and refuses a newer one', () => {
    expect(pendingMigrations(4, ['a', 'b', 'c', 'd', 'e', 'f'])).toEqual([
      [5, 'e'],
      [6, 'f'],
    ]);
    expect(pendingMigrations(6, ['a', 'b', 'c', 'd', 'e', 'f'])).toEqual([]);
    expect(() => pendingMigrations(7, ['a', 'b', 'c', 'd', 'e', 'f'])).toThrow(/version 7 is newer than this goal-loop \(6\)/);
  });
});
