import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OLD_DEFAULT_DB_PATH, openLedger, resolveDbPath } from '../../src/ledger/open-ledger.js';
import { migrate, SQLITE_MIGRATIONS } from '../../src/ledger/sqlite/migrations.js';
import { SqliteLedger } from '../../src/ledger/sqlite/sqlite-ledger.js';
import { describeLedgerContract, key, spec } from '../helpers/ledger-contract.js';
import { tempDir } from '../helpers/temp.js';

let dir: string;
const open: SqliteLedger[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'goal-ledger-'));
});

afterEach(async () => {
  for (const l of open.splice(0)) await l.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

function ledgerAt(path = join(dir, 'ledger.db')): SqliteLedger {
  const l = new SqliteLedger(path);
  open.push(l);
  return l;
}

function userVersion(path: string): number {
  const db = new Database(path);
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

let contractPath = '';
describeLedgerContract(
  'SQLite',
  async () => {
    contractPath = join(await tempDir('goal-ledger-'), 'ledger.db');
    return new SqliteLedger(contractPath);
  },
  async () => new SqliteLedger(contractPath),
);

describe('SqliteLedger: the file', () => {
  it('creates the file and its folder', async () => {
    const path = join(dir, 'nested', 'deeper', 'ledger.db');
    const l = ledgerAt(path);
    await l.upsertGoal(key, { spec: spec(), branch: 'goal/add-slugify' });
    expect(existsSync(path)).toBe(true);
  });
});

describe('SqliteLedger: migrations', () => {
  it('sets user_version to the number of migrations, and reopening does not migrate again', async () => {
    const path = join(dir, 'ledger.db');
    let l = ledgerAt(path);
    await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    await l.close();
    open.splice(0);
    expect(userVersion(path)).toBe(SQLITE_MIGRATIONS.length);
    expect(SQLITE_MIGRATIONS.length).toBeGreaterThan(0);
    l = ledgerAt(path);
    expect((await l.listTasks(key)).map((t) => t.taskId)).toEqual(['a', 'b', 'c']);
    await l.close();
    open.splice(0);
    expect(userVersion(path)).toBe(SQLITE_MIGRATIONS.length);
  });

  it('migrate is idempotent on a raw database', () => {
    const db = new Database(join(dir, 'raw.db'));
    try {
      expect(migrate(db)).toBe(SQLITE_MIGRATIONS.length);
      db.prepare(`INSERT INTO goals (repo, goal_id, objective, spec_json, state, branch, created_at, updated_at) VALUES ('r', 'g', 'o', '{}', 'INITIALIZING', 'b', 'now', 'now')`).run();
      expect(migrate(db)).toBe(SQLITE_MIGRATIONS.length);
      expect(migrate(db)).toBe(SQLITE_MIGRATIONS.length);
      expect(db.prepare('SELECT count(*) AS n FROM goals').get()).toEqual({ n: 1 });
      const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).all() as Array<{ name: string }>).map((r) => r.name);
      expect(tables).toEqual(expect.arrayContaining(['attempts', 'events', 'goals', 'tasks']));
    } finally {
      db.close();
    }
  });

  it('refuses a database written by a newer goal-loop, and leaves its data alone', async () => {
    const path = join(dir, 'newer.db');
    const db = new Database(path);
    db.exec('CREATE TABLE future (x TEXT)');
    db.prepare(`INSERT INTO future VALUES ('keep me')`).run();
    db.pragma(`user_version = ${SQLITE_MIGRATIONS.length + 1}`);
    db.close();

    expect(() => ledgerAt(path)).toThrow(/newer/);
    expect(userVersion(path)).toBe(SQLITE_MIGRATIONS.length + 1);
    const check = new Database(path);
    try {
      expect(check.prepare('SELECT x FROM future').all()).toEqual([{ x: 'keep me' }]);
      expect(check.prepare(`SELECT name FROM sqlite_master WHERE name = 'goals'`).all()).toEqual([]);
    } finally {
      check.close();
    }
  });

  it('migrate itself refuses a newer schema version', () => {
    const db = new Database(':memory:');
    try {
      db.pragma(`user_version = ${SQLITE_MIGRATIONS.length + 5}`);
      expect(() => migrate(db)).toThrow(/newer/);
    } finally {
      db.close();
    }
  });
});

describe('openLedger', () => {
  it('uses GOAL_LOOP_DB', async () => {
    const path = join(dir, 'from-env', 'ledger.db');
    const l = openLedger({ GOAL_LOOP_DB: path });
    try {
      await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    } finally {
      await l.close();
    }
    expect(existsSync(path)).toBe(true);
  });

  it('defaults to one ledger per user (XDG state directory), whatever the working directory', async () => {
    const env = { XDG_STATE_HOME: join(dir, 'state') };
    const user = join(dir, 'state', 'goal-loop', 'ledger.db');
    expect(resolveDbPath(env, join(dir, 'a'))).toEqual({ path: user });
    expect(resolveDbPath(env, join(dir, 'b'))).toEqual({ path: user });
    expect(resolveDbPath({ ...env, GOAL_LOOP_DB: 'rel/l.db' }, join(dir, 'a'))).toEqual({ path: join(dir, 'a', 'rel', 'l.db') });
    const l = openLedger(env);
    await l.close();
    expect(existsSync(user)).toBe(true);
  });

  it('finds a ledger at the old default (./.goal-loop/ledger.db) and says how to move it; once the user ledger exists, says the old one is not read', async () => {
    const env = { XDG_STATE_HOME: join(dir, 'state2') };
    const project = join(dir, 'project');
    const old = join(project, OLD_DEFAULT_DB_PATH);
    const l = openLedger({ GOAL_LOOP_DB: old });
    await l.close();
    const found = resolveDbPath(env, project);
    expect(found.path).toBe(old);
    expect(found.notice).toMatch(/old default.*mv .*\.goal-loop\/ledger\.db\*.*GOAL_LOOP_DB=/);
    const user = openLedger(env);
    await user.close();
    const both = resolveDbPath(env, project);
    expect(both.path).toBe(join(dir, 'state2', 'goal-loop', 'ledger.db'));
    expect(both.notice).toMatch(/older ledger and is not read/);
  });
});
