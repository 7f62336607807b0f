import { describe, expect, it } from 'vitest';
import { EPOCH_ZERO, epochAt, epochTime, FOR_UPDATE, flag, isoTime, join, json, jsonb, list, render, renderDdl, sql, text } from '../../src/ledger/sql/statement.js';

describe('a statement written once, rendered per dialect', () => {
  const key = { repo: 'o/r', goalId: 'g' };
  const statement = sql`SELECT * FROM goals WHERE repo = ${key.repo} AND ${join([sql`goal_id = ${key.goalId}`, sql`state NOT IN ${list(['A', 'B'])}`], ' AND ')} ${FOR_UPDATE}`;

  it('numbers PostgreSQL placeholders in order, nested fragments included; SQLite uses ?', () => {
    expect(render(statement, 'postgres')).toEqual({ text: 'SELECT * FROM goals WHERE repo = $1 AND goal_id = $2 AND state NOT IN ($3, $4) FOR UPDATE', params: ['o/r', 'g', 'A', 'B'] });
    expect(render(statement, 'sqlite')).toEqual({ text: 'SELECT * FROM goals WHERE repo = ? AND goal_id = ? AND state NOT IN (?, ?) ', params: ['o/r', 'g', 'A', 'B'] });
  });

  it("reads PostgreSQL's clock in the statement, and SQLite's host clock once per statement (ISO text or epoch milliseconds)", () => {
    const timed = sql`UPDATE t SET at = ${isoTime()}, until = ${epochTime(500)}, since = ${epochTime()}, zero = ${EPOCH_ZERO}`;
    expect(render(timed, 'postgres')).toEqual({
      text: "UPDATE t SET at = clock_timestamp(), until = (clock_timestamp() + $1 * interval '1 millisecond'), since = clock_timestamp(), zero = 'epoch'",
      params: [500],
    });
    const before = Date.now();
    const { text: sqliteText, params } = render(timed, 'sqlite');
    expect(sqliteText).toBe('UPDATE t SET at = ?, until = ?, since = ?, zero = 0');
    const [at, until, since] = params as [string, number, number];
    expect(until - since).toBe(500);
    expect(Date.parse(at)).toBe(since);
    expect(since).toBeGreaterThanOrEqual(before);
  });

  it("binds a caller's instant for an epoch column: milliseconds in SQLite, a timestamptz in PostgreSQL", () => {
    const at = sql`SELECT * FROM t WHERE at > ${epochAt(Date.UTC(2026, 0, 1, 0, 0, 1, 5))}`;
    expect(render(at, 'sqlite')).toEqual({ text: 'SELECT * FROM t WHERE at > ?', params: [Date.UTC(2026, 0, 1, 0, 0, 1, 5)] });
    expect(render(at, 'postgres')).toEqual({ text: 'SELECT * FROM t WHERE at > $1', params: ['2026-01-01T00:00:01.005Z'] });
  });

  it('binds free text, documents and flags as each store keeps them', () => {
    const values = sql`${text('a\0b')} ${json({ s: 'x\0' })} ${jsonb({ s: 'x\0' })} ${flag(true)} ${text(null)}`;
    expect(render(values, 'postgres').params).toEqual(['a\uFFFDb', '{"s":"x\\u0000"}', '{"s":"x\uFFFD"}', true, null]);
    expect(render(values, 'sqlite').params).toEqual(['a\0b', '{"s":"x\\u0000"}', '{"s":"x\\u0000"}', 1, null]);
  });

  it('DDL takes no parameters', () => {
    expect(() => renderDdl(sql`CREATE TABLE t (x TEXT DEFAULT ${'a'})`, 'sqlite')).toThrow(/no parameters/);
  });
});
