import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Ledger } from '../ports/ledger.js';
import type { WorkQueue } from '../ports/queue.js';
import { checkpointInBackground } from './sqlite/background-checkpoints.js';
import { openSqlite } from './sqlite/database.js';
import { SqliteLedger } from './sqlite/sqlite-ledger.js';
import { SqliteWorkQueue } from './sqlite/sqlite-queue.js';

/** Where goal-loop kept its ledger before 0.2: in the folder a command started in. */
export const OLD_DEFAULT_DB_PATH = './.goal-loop/ledger.db';

/** The user's ledger: `$XDG_STATE_HOME/goal-loop/ledger.db` (`~/.local/state/goal-loop/ledger.db`). */
export function userDbPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'goal-loop', 'ledger.db');
}

/**
 * The SQLite ledger's file: `GOAL_LOOP_DB`, else one per user (so `status` shows the same goals
 * from any folder). A ledger at the old default in this folder is still found, with a notice
 * saying how to move it, as long as the user's does not exist yet.
 */
export function resolveDbPath(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): { path: string; notice?: string } {
  if (env.GOAL_LOOP_DB) return { path: resolve(cwd, env.GOAL_LOOP_DB) };
  const user = userDbPath(env);
  const old = resolve(cwd, OLD_DEFAULT_DB_PATH);
  if (!existsSync(old) || old === user) return { path: user };
  if (!existsSync(user)) {
    return {
      path: old,
      notice: `goal-loop: using the ledger ${old} (the old default, in this folder); to keep one ledger for all your goals, move it (with every goal-loop process stopped): mkdir -p ${join(user, '..')} && mv ${old}* ${join(user, '..')}/ — or set GOAL_LOOP_DB=${old}`,
    };
  }
  return { path: user, notice: `goal-loop: ${old} is an older ledger and is not read (the ledger is ${user}); set GOAL_LOOP_DB=${old} to see its goals` };
}

/** Says a resolveDbPath notice once per process, on stderr (stdout may be a protocol or JSON). */
let noticed = false;
function tell(notice: string | undefined): void {
  if (!notice || noticed) return;
  noticed = true;
  process.stderr.write(`${notice}\n`);
}

/** The embedded ledger: `GOAL_LOOP_DB` (SQLite), default the user's (see resolveDbPath). */
export function openLedger(env: NodeJS.ProcessEnv = process.env): Ledger {
  const { path, notice } = resolveDbPath(env);
  tell(notice);
  return new SqliteLedger(path);
}

/** Where goals and their queue live: the ledger and the work queue share one database. */
export interface Store {
  kind: 'sqlite' | 'postgres';
  /** Where it is, without credentials (for logs and `status`). */
  location: string;
  ledger: Ledger;
  queue: WorkQueue;
  close(): Promise<void>;
}

/** How a store is used: a long-running process keeps its event loop free of disk syncs. */
export interface StoreOptions {
  /**
   * `background`: WAL checkpoints run on a thread of their own (with `synchronous = NORMAL` they
   * make every disk sync but the WAL header's, once per cycle of the WAL), so a busy disk stalls
   * neither a webhook acknowledgement nor a goal's loop. `inline` (the default): SQLite's own, on
   * the committing connection; right for a command that ends soon.
   */
  checkpoints?: 'inline' | 'background';
}

/** The embedded store: one SQLite file holds the ledger and the queue. */
export function openSqliteStore(path: string, options: StoreOptions = {}): Store {
  const db = openSqlite(path);
  const checkpoints = options.checkpoints === 'background' && path !== ':memory:' ? checkpointInBackground(db, path) : undefined;
  const ledger = new SqliteLedger(db);
  const close = async () => {
    await checkpoints?.stop();
    await ledger.close();
  };
  return { kind: 'sqlite', location: path, ledger, queue: new SqliteWorkQueue(db), close };
}

/**
 * Where this process keeps goals and their queue: PostgreSQL (ledger + pg-boss) when
 * `DATABASE_URL` is a postgres:// URL, else the SQLite file at `GOAL_LOOP_DB`.
 */
export async function openStore(env: NodeJS.ProcessEnv = process.env, options: StoreOptions = {}): Promise<Store> {
  const url = env.DATABASE_URL;
  if (!url) {
    const { path, notice } = resolveDbPath(env);
    tell(notice);
    return openSqliteStore(path, options);
  }
  if (!/^postgres(ql)?:\/\//.test(url)) throw new Error('DATABASE_URL must be a postgres:// (or postgresql://) URL');
  // Loaded on demand: the embedded store never needs pg or pg-boss.
  const { openPostgresStore } = await import('./postgres/open-postgres.js');
  return openPostgresStore(url);
}
