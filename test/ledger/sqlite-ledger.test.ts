import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateGoalSpec } from '../../src/goal/parse.js';
import type { GoalSpec } from '../../src/goal/schema.js';
import { DEFAULT_DB_PATH, openLedger } from '../../src/ledger/open-ledger.js';
import { migrate, SQLITE_MIGRATIONS } from '../../src/ledger/sqlite/migrations.js';
import { SqliteLedger } from '../../src/ledger/sqlite/sqlite-ledger.js';
import type { GoalKey } from '../../src/ports/ledger.js';
import { rawSpec, rawTask } from '../helpers/spec-builders.js';

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

async function reopen(l: SqliteLedger, path = join(dir, 'ledger.db')): Promise<SqliteLedger> {
  await l.close();
  open.splice(open.indexOf(l), 1);
  return ledgerAt(path);
}

const key: GoalKey = { repo: '/repos/app', goalId: 'add-slugify' };
const spec = (ids = ['a', 'b', 'c'], extra: Record<string, unknown> = {}): GoalSpec =>
  validateGoalSpec(rawSpec(ids.map((id, i) => rawTask(id, i > 0 ? [ids[i - 1]!] : [])), { goal_id: key.goalId, ...extra }));

function userVersion(path: string): number {
  const db = new Database(path);
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

describe('SqliteLedger: goals and tasks', () => {
  it('creates the file and its folder', async () => {
    const path = join(dir, 'nested', 'deeper', 'ledger.db');
    const l = ledgerAt(path);
    await l.upsertGoal(key, { spec: spec(), branch: 'goal/add-slugify' });
    expect(existsSync(path)).toBe(true);
  });

  it('records a new goal with its spec, branch, state and zero counters', async () => {
    const l = ledgerAt();
    const s = spec(['a'], { constraints: ['keep it small'] });
    const g = await l.upsertGoal(key, { spec: s, branch: 'goal/add-slugify' });
    expect(g).toMatchObject({
      repo: key.repo,
      goalId: key.goalId,
      objective: s.objective,
      state: 'INITIALIZING',
      stopReason: null,
      branch: 'goal/add-slugify',
      control: null,
      counters: { iterations: 0, errors: 0, errors_recovered: 0, tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 }, cost_usd: 0 },
    });
    expect(g.spec).toEqual(s);
    expect(await l.getGoal(key)).toEqual(g);
  });

  it('lists the tasks in spec order, pending, with no attempts', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(['z', 'y', 'x']), branch: 'b' });
    const tasks = await l.listTasks(key);
    expect(tasks.map((t) => t.taskId)).toEqual(['z', 'y', 'x']);
    expect(tasks.map((t) => t.position)).toEqual([0, 1, 2]);
    for (const t of tasks) expect(t).toMatchObject({ status: 'pending', attempts: 0, checkpointSha: null, lastError: null, approved: false });
    expect(tasks[0]!.title).toBe('Title of z');
  });

  it('an unknown goal is undefined to get, and an error to change', async () => {
    const l = ledgerAt();
    expect(await l.getGoal({ repo: 'x', goalId: 'y' })).toBeUndefined();
    await expect(l.listTasks({ repo: 'x', goalId: 'y' })).rejects.toThrow(/unknown goal/);
    await expect(l.setState({ repo: 'x', goalId: 'y' }, 'EXECUTING', 'start')).rejects.toThrow();
    await expect(l.addCounters({ repo: 'x', goalId: 'y' }, { iterations: 1 })).rejects.toThrow();
  });

  it('the same goal id in two repositories is two goals', async () => {
    const l = ledgerAt();
    const other = { repo: '/repos/other', goalId: key.goalId };
    await l.upsertGoal(key, { spec: spec(['a']), branch: 'b1' });
    await l.upsertGoal(other, { spec: spec(['p', 'q']), branch: 'b2' });
    await l.addCounters(other, { iterations: 3 });
    expect((await l.listTasks(key)).map((t) => t.taskId)).toEqual(['a']);
    expect((await l.listTasks(other)).map((t) => t.taskId)).toEqual(['p', 'q']);
    expect((await l.getGoal(key))!.counters.iterations).toBe(0);
    expect((await l.listGoals()).map((g) => g.repo).sort()).toEqual(['/repos/app', '/repos/other']);
  });

  it('upserting again refreshes the spec and keeps counters, history and task progress', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(['a', 'b', 'c']), branch: 'goal/x', priority: 'P0' });
    await l.updateTask(key, 'a', { status: 'done', attempts: 2, checkpointSha: 'abc1234' });
    await l.addCounters(key, { iterations: 2, errors_recovered: 1 });
    await l.setState(key, 'ESCALATED', 'verified', 'b', 'task b failed');

    const next = spec(['b', 'a', 'd'], { objective: 'A new objective' });
    const g = await l.upsertGoal(key, { spec: next, branch: 'goal/x' });
    expect(g.objective).toBe('A new objective');
    expect(g.spec).toEqual(next);
    expect(g.counters).toMatchObject({ iterations: 2, errors_recovered: 1 });
    expect(g.priority).toBe('P0');
    expect(g.state).toBe('ESCALATED');

    const tasks = await l.listTasks(key);
    expect(tasks.map((t) => t.taskId)).toEqual(['b', 'a', 'd']);
    expect(tasks.find((t) => t.taskId === 'a')).toMatchObject({ status: 'done', attempts: 2, checkpointSha: 'abc1234' });
    expect(tasks.find((t) => t.taskId === 'd')).toMatchObject({ status: 'pending', attempts: 0 });
    expect((await l.listEvents(key)).length).toBe(1);
  });

  it('updates a task field by field, and refuses an unknown task', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    await l.updateTask(key, 'b', { status: 'running', attempts: 1 });
    await l.updateTask(key, 'b', { lastError: 'exit 1', approved: true });
    expect((await l.listTasks(key))[1]).toMatchObject({ taskId: 'b', status: 'running', attempts: 1, lastError: 'exit 1', approved: true });
    await l.updateTask(key, 'b', { status: 'done', checkpointSha: 'f00', lastError: null });
    expect((await l.listTasks(key))[1]).toMatchObject({ status: 'done', attempts: 1, checkpointSha: 'f00', lastError: null, approved: true });
    await expect(l.updateTask(key, 'nope', { status: 'done' })).rejects.toThrow(/nope/);
  });

  it('keeps only the head and tail of a long last error', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(['a']), branch: 'b' });
    const long = `HEAD-${'x'.repeat(100_000)}-TAIL`;
    await l.updateTask(key, 'a', { lastError: long });
    const stored = (await l.listTasks(key))[0]!.lastError!;
    expect(stored.length).toBeLessThan(20_000);
    expect(stored.startsWith('HEAD-')).toBe(true);
    expect(stored.endsWith('-TAIL')).toBe(true);
  });
});

describe('SqliteLedger: states, attempts, counters, control', () => {
  it('every state change is an event with from, to, event and detail; the stop reason follows the rules', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    await l.setState(key, 'DECOMPOSING', 'start', 'spec loaded');
    await l.setState(key, 'EXECUTING', 'start');
    await l.setState(key, 'STOPPED', 'executed', null, 'cost_cap_usd reached');
    expect((await l.getGoal(key))!).toMatchObject({ state: 'STOPPED', stopReason: 'cost_cap_usd reached' });
    await l.setState(key, 'STOPPED', 'noop');
    expect((await l.getGoal(key))!.stopReason).toBe('cost_cap_usd reached');
    await l.setState(key, 'EXECUTING', 'start', null, null);
    expect((await l.getGoal(key))!.stopReason).toBeNull();

    const events = await l.listEvents(key);
    expect(events.map((e) => [e.from, e.to, e.event, e.detail])).toEqual([
      ['INITIALIZING', 'DECOMPOSING', 'start', 'spec loaded'],
      ['DECOMPOSING', 'EXECUTING', 'start', null],
      ['EXECUTING', 'STOPPED', 'executed', null],
      ['STOPPED', 'STOPPED', 'noop', null],
      ['STOPPED', 'EXECUTING', 'start', null],
    ]);
    expect(events.every((e) => !Number.isNaN(Date.parse(e.at)))).toBe(true);
  });

  it('records attempts with exit codes and output, in order, per task', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    await l.recordAttempt(key, { taskId: 'a', attempt: 1, phase: 'verify', passed: false, exitCode: 1, output: 'expected 2', durationMs: 12, logPath: '/logs/a-1.log' });
    await l.recordAttempt(key, { taskId: 'b', attempt: 1, phase: 'run', passed: false, exitCode: null, output: 'killed', durationMs: 5 });
    await l.recordAttempt(key, { taskId: 'a', attempt: 2, phase: 'verify', passed: true, exitCode: 0, output: 'ok', durationMs: 9 });
    expect(await l.listAttempts(key, 'a')).toEqual([
      { taskId: 'a', attempt: 1, phase: 'verify', passed: false, exitCode: 1, output: 'expected 2', logPath: '/logs/a-1.log', durationMs: 12 },
      { taskId: 'a', attempt: 2, phase: 'verify', passed: true, exitCode: 0, output: 'ok', durationMs: 9 },
    ]);
    expect((await l.listAttempts(key)).map((a) => `${a.taskId}#${a.attempt}`)).toEqual(['a#1', 'b#1', 'a#2']);
    expect((await l.listAttempts(key, 'b'))[0]!.exitCode).toBeNull();
  });

  it('trims long attempt output, keeping its head and tail', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    await l.recordAttempt(key, { taskId: 'a', attempt: 1, phase: 'verify', passed: false, exitCode: 2, output: `FIRST${'y'.repeat(1_000_000)}LAST`, durationMs: 1 });
    const [a] = await l.listAttempts(key, 'a');
    expect(a!.output.length).toBeLessThan(20_000);
    expect(a!.output.startsWith('FIRST')).toBe(true);
    expect(a!.output.endsWith('LAST')).toBe(true);
  });

  it('adds to the counters and returns the totals', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    await l.addCounters(key, { iterations: 2, errors: 1, tokens: { input: 100, output: 20 }, cost_usd: 0.25 });
    const totals = await l.addCounters(key, { iterations: 1, errors_recovered: 1, tokens: { input: 5, cache_read: 7, cache_write: 3 }, cost_usd: 0.5 });
    expect(totals).toEqual({
      iterations: 3,
      errors: 1,
      errors_recovered: 1,
      tokens: { input: 105, output: 20, cache_read: 7, cache_write: 3 },
      cost_usd: 0.75,
    });
    expect((await l.getGoal(key))!.counters).toEqual(totals);
  });

  it('holds a pause/stop request until it is cleared', async () => {
    const l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(), branch: 'b' });
    await l.setControl(key, 'pause');
    expect((await l.getGoal(key))!.control).toBe('pause');
    await l.setControl(key, 'stop');
    expect((await l.getGoal(key))!.control).toBe('stop');
    await l.setControl(key, null);
    expect((await l.getGoal(key))!.control).toBeNull();
  });

  it('a second connection to the same file sees the writes (status while a run is going)', async () => {
    const writer = ledgerAt();
    const reader = ledgerAt();
    await writer.upsertGoal(key, { spec: spec(), branch: 'b' });
    await writer.setState(key, 'EXECUTING', 'start');
    expect((await reader.getGoal(key))!.state).toBe('EXECUTING');
    await reader.setControl(key, 'stop');
    expect((await writer.getGoal(key))!.control).toBe('stop');
  });
});

describe('SqliteLedger: durability and migrations', () => {
  it('reopening the file keeps goals, tasks, attempts, events and counters', async () => {
    let l = ledgerAt();
    await l.upsertGoal(key, { spec: spec(), branch: 'goal/add-slugify' });
    await l.updateTask(key, 'a', { status: 'done', attempts: 1, checkpointSha: 'deadbee' });
    await l.recordAttempt(key, { taskId: 'a', attempt: 1, phase: 'verify', passed: true, exitCode: 0, output: 'ok', durationMs: 3 });
    await l.setState(key, 'ESCALATED', 'verified', 'b', 'task b failed after 3 attempt(s)');
    await l.addCounters(key, { iterations: 4, cost_usd: 1.5 });
    const before = { goal: await l.getGoal(key), tasks: await l.listTasks(key), attempts: await l.listAttempts(key), events: await l.listEvents(key) };

    l = await reopen(l);
    expect({ goal: await l.getGoal(key), tasks: await l.listTasks(key), attempts: await l.listAttempts(key), events: await l.listEvents(key) }).toEqual(before);
    expect(before.goal).toMatchObject({ state: 'ESCALATED', stopReason: 'task b failed after 3 attempt(s)' });
  });

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

  it('defaults to ./.goal-loop/ledger.db in the working directory', async () => {
    expect(DEFAULT_DB_PATH).toBe('./.goal-loop/ledger.db');
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const l = openLedger({});
      await l.close();
      expect(existsSync(join(dir, '.goal-loop', 'ledger.db'))).toBe(true);
    } finally {
      process.chdir(cwd);
    }
  });
});
