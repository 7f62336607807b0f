import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

// A throwaway PostgreSQL server for tests and benchmarks (no vitest here: `npm run bench` uses it too).

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
  /** The directory holding the cluster's data, log and socket (see stopThrowawayCluster). */
  dir: string;
  stop(): void;
}

function runner(bin: string): (cmd: string, args: string[]) => Buffer {
  const asRoot = process.getuid?.() === 0;
  return (cmd, args) => execFileSync(asRoot ? 'runuser' : join(bin, cmd), asRoot ? ['-u', 'postgres', '--', join(bin, cmd), ...args] : args, { stdio: 'pipe' });
}

/** Stops the cluster started in `dir` (if it runs) and removes it: also from another process. */
export function stopThrowawayCluster(dir: string): void {
  const bin = postgresBinDir();
  try {
    if (bin) runner(bin)('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', 'stop']);
  } catch {
    // not running
  }
  rmSync(dir, { recursive: true, force: true });
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
  const run = runner(bin);
  if (asRoot) {
    const { uid, gid } = JSON.parse(execFileSync('sh', ['-c', 'printf \'{"uid":%s,"gid":%s}\' "$(id -u postgres)" "$(id -g postgres)"'], { encoding: 'utf8' })) as {
      uid: number;
      gid: number;
    };
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const stop = () => stopThrowawayCluster(dir);
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
    return { url: `postgres://goal_loop:goal_loop@127.0.0.1:${port}/goal_loop`, dir, stop };
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
