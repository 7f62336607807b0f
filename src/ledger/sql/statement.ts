/**
 * SQL written once for SQLite and PostgreSQL. A statement is a template: its values become
 * placeholders (`?` or `$n`), and the few places the dialects differ are markers rendered per
 * dialect: the clock, how a value of some kind is bound, and a word or two of dialect SQL.
 */
export type Dialect = 'sqlite' | 'postgres';

export class Sql {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

export const sql = (strings: TemplateStringsArray, ...values: unknown[]): Sql => new Sql(strings, values);

/** A fragment that joins `parts` with `separator` (e.g. a WHERE's conditions). */
export function join(parts: readonly Sql[], separator: string): Sql {
  const strings = ['', ...parts.slice(1).map(() => separator), ''];
  return new Sql(strings, parts);
}

/** A name the code chose (a column, a table), written as it is: never text from outside. */
export const identifier = (name: string): Sql => new Sql([name], []);

/** `(?, ?, ?)` for a non-empty list of values. */
export const list = (values: readonly unknown[]): Sql =>
  sql`(${join(
    values.map((v) => sql`${v}`),
    ', ',
  )})`;

/** SQL text that differs between the dialects. */
export class DialectSql {
  readonly text: Record<Dialect, string>;
  constructor(byDialect: Record<Dialect, string>) {
    this.text = byDialect;
  }
}
export const dialectSql = (sqlite: string, postgres: string) => new DialectSql({ sqlite, postgres });

/** PostgreSQL locks the goal row a transaction reads before it writes; SQLite's IMMEDIATE transaction already holds the file's write lock. */
export const FOR_UPDATE = dialectSql('', 'FOR UPDATE');
/** Orders text by its bytes, as SQLite's default collation does. */
export const BYTEWISE = dialectSql('', 'COLLATE "C"');

/**
 * The clock. PostgreSQL reads the database's (workers on many machines must agree); SQLite, one
 * host's, read once per statement. Times are ISO 8601 text in most SQLite columns and epoch
 * milliseconds in the effects' and leases' (`epoch`); PostgreSQL keeps both as timestamptz.
 */
class Clock {
  constructor(
    readonly form: 'iso' | 'epoch',
    readonly offsetMs: number,
  ) {}
}
/** Now, `offsetMs` from now, for a time column kept as ISO text in SQLite. */
export const isoTime = (offsetMs = 0) => new Clock('iso', offsetMs);
/** Now, `offsetMs` from now, for a time column kept as epoch milliseconds in SQLite. */
export const epochTime = (offsetMs = 0) => new Clock('epoch', offsetMs);
/** The zero time of an epoch column ("not claimed"). */
export const EPOCH_ZERO = dialectSql('0', "'epoch'");

/**
 * A value bound by its kind. `text` is free text (tool output, a model's words) that PostgreSQL
 * cannot hold as it is (U+0000, lone surrogates); `json` a document kept verbatim, `jsonb` one
 * PostgreSQL stores as jsonb (it rejects `\u0000` even escaped); `flag` a boolean (0/1 in SQLite).
 */
class Bound {
  constructor(
    readonly kind: 'text' | 'json' | 'jsonb' | 'flag' | 'epoch',
    readonly value: unknown,
  ) {}
}
export const text = (value: string | null) => new Bound('text', value);
export const json = (value: unknown) => new Bound('json', value);
export const jsonb = (value: unknown) => new Bound('jsonb', value);
export const flag = (value: boolean) => new Bound('flag', value);
/** A given instant (epoch ms) for an epoch column: the number in SQLite, a timestamptz in PostgreSQL (a caller's clock, not the store's). */
export const epochAt = (ms: number) => new Bound('epoch', ms);

/**
 * PostgreSQL text cannot hold U+0000, which tool output sometimes does: it becomes U+FFFD
 * instead of failing the write (SQLite keeps it).
 */
export const pgText = <T extends string | null>(value: T): T =>
  value === null ? value : (value.replaceAll('\0', '\uFFFD').replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\uFFFD') as T);

/** JSON for a `jsonb` column, which rejects `\u0000` even escaped (`json` columns take it). */
export const toJsonb = (value: unknown): string => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'string' ? pgText(v) : v));

function bind(dialect: Dialect, { kind, value }: Bound): unknown {
  switch (kind) {
    case 'text':
      return dialect === 'postgres' ? pgText(value as string | null) : value;
    case 'json':
      return JSON.stringify(value);
    case 'jsonb':
      return dialect === 'postgres' ? toJsonb(value) : JSON.stringify(value);
    case 'flag':
      return dialect === 'postgres' ? value : Number(value);
    case 'epoch':
      return dialect === 'postgres' ? new Date(value as number).toISOString() : value;
  }
}

export interface Rendered {
  text: string;
  params: unknown[];
}

/** The statement's text and parameters in `dialect`. */
export function render(statement: Sql, dialect: Dialect): Rendered {
  const params: unknown[] = [];
  const nowMs = Date.now();
  const placeholder = (value: unknown) => {
    params.push(value);
    return dialect === 'postgres' ? `$${params.length}` : '?';
  };
  const clock = ({ form, offsetMs }: Clock): string => {
    if (dialect === 'sqlite') return placeholder(form === 'iso' ? new Date(nowMs + offsetMs).toISOString() : nowMs + offsetMs);
    return offsetMs === 0 ? 'clock_timestamp()' : `(clock_timestamp() + ${placeholder(offsetMs)} * interval '1 millisecond')`;
  };
  const walk = (s: Sql): string =>
    s.strings.reduce((out, str, i) => {
      if (i === 0) return str;
      const v = s.values[i - 1];
      const piece = v instanceof Sql ? walk(v) : v instanceof DialectSql ? v.text[dialect] : v instanceof Clock ? clock(v) : placeholder(v instanceof Bound ? bind(dialect, v) : v);
      return out + piece + str;
    }, '');
  return { text: walk(statement), params };
}

/** DDL text: a statement with no parameters. */
export function renderDdl(statement: Sql, dialect: Dialect): string {
  const { text: ddl, params } = render(statement, dialect);
  if (params.length > 0) throw new Error('DDL takes no parameters');
  return ddl;
}
