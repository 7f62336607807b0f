import { resolve } from 'node:path';
import type { Ledger } from '../ports/ledger.js';
import { SqliteLedger } from './sqlite/sqlite-ledger.js';

export const DEFAULT_DB_PATH = './.goal-loop/ledger.db';

/** The ledger the environment asks for: `GOAL_LOOP_DB` (SQLite), default `./.goal-loop/ledger.db`. */
export function openLedger(env: NodeJS.ProcessEnv = process.env): Ledger {
  return new SqliteLedger(resolve(env.GOAL_LOOP_DB || DEFAULT_DB_PATH));
}
