import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A database on the test server whose role may create databases. */
    postgresUrl: string;
    /** A database already migrated (ledger + pg-boss), to copy for each fresh store. */
    postgresTemplate: string;
    /** Prefix of every database this run creates, dropped at teardown. */
    postgresPrefix: string;
  }
}

export const TEST_DATABASE_ENV = 'GOAL_LOOP_TEST_DATABASE_URL';

/** The directory of initdb/pg_ctl: Debian's newest /usr/lib/postgresql/<v>/bin, else PATH. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions[0]) return join(root, versions[0], 'bin');
  try {
    return execFileSync('sh', ['-c', 'dirname "$(command -v initdb)"'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface Cluster {
  url: string;
  stop(): void;
}

/**
 * Starts a private, throwaway PostgreSQL cluster on 127.0.0.1 (trust auth, no fsync) with a
 * role `goal_loop` that may create databases. initdb refuses root, so as root it runs as the
 * `postgres` user.
 */
export async function startThrowawayCluster(): Promise<Cluster> {
  const bin = postgresBinDir();
  if (!bin) {
    throw new Error(`PostgreSQL is needed by the tests and was not found: apt-get install -y postgresql (or set ${TEST_DATABASE_ENV})`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'goal-loop-pg-'));
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) =>
    execFileSync(asRoot ? 'runuser' : join(bin, cmd), asRoot ? ['-u', 'postgres', '--', join(bin, cmd), ...args] : args, { stdio: 'pipe' });
  if (asRoot) {
    const { uid, gid } = JSON.parse(execFileSync('sh', ['-c', 'printf \'{"uid":%s,"gid":%s}\' "$(id -u postgres)" "$(id -g postgres)"'], { encoding: 'utf8' })) as {
      uid: number;
      gid: number;
    };
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const stop = () => {
    try {
      run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
    } catch {
      // not running
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
    const port = await freePort();
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`;
    run('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', opts, '-w', '-t', '60', 'start']);
    const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE goal_loop LOGIN CREATEDB PASSWORD 'goal_loop'`);
      await admin.query('CREATE DATABASE goal_loop OWNER goal_loop');
    } finally {
      await admin.end();
    }
    return { url: `postgres://goal_loop:goal_loop@127.0.0.1:${port}/goal_loop`, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/** `url` pointing at database `name` on the same server. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs `sql` on the server behind `url`, connected to its database. */
export async function adminQuery(url: string, sql: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

/**
 * A new database of its own, dropped when the run ends: a copy of the migrated template (ledger
 * and pg-boss installed), or an empty one for tests of the migrations themselves.
 */
export async function freshDatabase(opts: { empty?: boolean } = {}): Promise<string> {
  const base = inject('postgresUrl');
  const name = `${inject('postgresPrefix')}${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = opts.empty ? 'template0' : inject('postgresTemplate');
  for (let attempt = 1; ; attempt++) {
    try {
      await adminQuery(base, `CREATE DATABASE "${name}" TEMPLATE "${template}"`);
      return withDatabase(base, name);
    } catch (err) {
      // The template's last connection may still be closing (55006: object in use).
      if ((err as { code?: string }).code !== '55006' || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Drops every database whose name starts with `prefix` (the run's own). */
export async function dropDatabases(url: string, prefix: string): Promise<void> {
  const { rows } = await adminQuery(url, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, [prefix]);
  for (const { datname } of rows as Array<{ datname: string }>) await adminQuery(url, `DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
}
