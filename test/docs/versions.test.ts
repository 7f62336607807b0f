import { describe, expect, it } from 'vitest';
import { POSTGRES_MIGRATIONS } from '../../src/ledger/postgres/migrations.js';
import { SQLITE_MIGRATIONS } from '../../src/ledger/sqlite/migrations.js';
import { readDoc } from './markdown.js';

// The README's rule for mixed versions on one ledger ("Versions and upgrades") rests on two facts
// kept here: both stores have one schema history, and every step after the first only adds, so a
// process of the previous schema still finds everything it uses. The changelog names the version.

const ADDITIVE = /^(CREATE (UNIQUE )?INDEX( IF NOT EXISTS)? \w+ ON |CREATE TABLE( IF NOT EXISTS)? |ALTER TABLE \S+ ADD COLUMN )/i;

function statements(migration: string): string[] {
  return migration
    .split(';')
    .map((s) => s.replace(/--[^\n]*/g, '').trim())
    .filter(Boolean);
}

describe('the ledger schema, as "Versions and upgrades" describes it', () => {
  it('has one version history on SQLite and PostgreSQL', () => {
    expect(POSTGRES_MIGRATIONS.length).toBe(SQLITE_MIGRATIONS.length);
  });

  it.each([
    ['SQLite', SQLITE_MIGRATIONS],
    ['PostgreSQL', POSTGRES_MIGRATIONS],
  ] as const)('%s: every migration after the first only adds tables, columns and indexes', (_store, migrations) => {
    const other = migrations.slice(1).flatMap((m, i) =>
      statements(m)
        .filter((s) => !ADDITIVE.test(s))
        .map((s) => `v${i + 2}: ${s.split('\n')[0]}`),
    );
    // A step that drops, renames or rewrites breaks processes of the previous schema that are still
    // running: the README's rule for rolling upgrades must then say so.
    expect(other).toEqual([]);
  });

  it('the checker refuses what is not additive', () => {
    expect(['DROP TABLE goals', 'ALTER TABLE goals RENAME COLUMN a TO b', 'ALTER TABLE goals DROP COLUMN a', 'UPDATE goals SET a = 1'].filter((s) => ADDITIVE.test(s))).toEqual([]);
  });

  it('the changelog names the schema version of the next release and of the latest one', () => {
    const changelog = readDoc('CHANGELOG.md');
    const sections = changelog.split(/^## /m).slice(1);
    expect(sections[0]).toMatch(/^\[Unreleased\]/);
    for (const section of sections.slice(0, 2)) {
      const stated = /[Ll]edger\s+schema\s+version\s+(\d+)/.exec(section);
      expect(stated, `"## ${section.split('\n')[0]}" names no ledger schema version`).not.toBeNull();
      if (section === sections[0]) expect(Number(stated![1])).toBe(SQLITE_MIGRATIONS.length);
    }
  });

  it('the README states the rule and names this test', () => {
    const readme = readDoc('README.md');
    expect(readme).toContain('## Versions and upgrades');
    expect(readme).toContain('test/docs/versions.test.ts');
  });
});
