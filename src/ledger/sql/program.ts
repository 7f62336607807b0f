import type { Sql } from './statement.js';

/**
 * A ledger operation written once for both stores: a generator that yields its statements and
 * receives their results. SQLite runs it synchronously (so a transaction is one synchronous
 * better-sqlite3 transaction that nothing else in the process can enter); PostgreSQL awaits each
 * statement on one connection.
 */
export type Program<T> = Generator<Step, T, unknown>;

export interface Step {
  statement: Sql;
  /** `rows`: the rows it returns; `count`: how many rows it changed. */
  want: 'rows' | 'count';
}

export function* rows<R>(statement: Sql): Program<R[]> {
  return (yield { statement, want: 'rows' }) as R[];
}

export function* firstRow<R>(statement: Sql): Program<R | undefined> {
  return (yield* rows<R>(statement))[0];
}

export function* count(statement: Sql): Program<number> {
  return (yield { statement, want: 'count' }) as number;
}

/** Runs programs on one database. */
export interface SqlDriver {
  /** Each statement on its own. */
  run<T>(program: Program<T>): Promise<T>;
  /** In one transaction that holds the write lock for what it reads (see FOR_UPDATE): all of it lands, or none. */
  transaction<T>(program: Program<T>): Promise<T>;
  close(): Promise<void>;
}

/** Steps `program` through with `execute`, synchronously. */
export function runSync<T>(program: Program<T>, execute: (step: Step) => unknown): T {
  let next = program.next();
  while (!next.done) next = program.next(execute(next.value));
  return next.value;
}

/** Steps `program` through with `execute`, awaiting each statement. */
export async function runAsync<T>(program: Program<T>, execute: (step: Step) => Promise<unknown>): Promise<T> {
  let next = program.next();
  while (!next.done) next = program.next(await execute(next.value));
  return next.value;
}
