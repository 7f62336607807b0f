import { readFileSync } from 'node:fs';
import { SandboxUnavailableError } from '../ports/sandbox.js';

/** The resource limits the jail's launcher sets, by their bash `ulimit` flag. */
export type LimitFlag = '-u' | '-f' | '-t' | '-n' | '-c';

/** The row of /proc/<pid>/limits behind each flag, and how many of its units make one of ulimit's. */
const ROWS: Record<LimitFlag, { row: string; per: number }> = {
  '-u': { row: 'Max processes', per: 1 },
  // /proc counts bytes; bash's ulimit -f and -c count 1024-byte blocks.
  '-f': { row: 'Max file size', per: 1024 },
  '-t': { row: 'Max cpu time', per: 1 },
  '-n': { row: 'Max open files', per: 1 },
  '-c': { row: 'Max core file size', per: 1024 },
};

/** One limit as the launcher sets it: `ulimit -S flag soft && ulimit -H flag hard`. */
export interface LimitSetting {
  flag: LimitFlag;
  soft: number;
  hard: number;
}

/**
 * The hard limits in the text of /proc/<pid>/limits, in ulimit's units (rounded down);
 * Infinity for `unlimited`. Throws when a row the jail needs is missing or unreadable.
 */
export function parseHardLimits(text: string): Record<LimitFlag, number> {
  const hard = new Map<string, string>();
  for (const line of text.split('\n')) {
    // "%-25s %-20s %-20s %-10s": the name's words have single spaces, then two or more.
    const m = /^(\S+(?: \S+)*) {2,}(\S+) +(\S+)/.exec(line);
    if (m) hard.set(m[1]!, m[3]!);
  }
  const out = {} as Record<LimitFlag, number>;
  for (const [flag, { row, per }] of Object.entries(ROWS) as [LimitFlag, (typeof ROWS)[LimitFlag]][]) {
    const value = hard.get(row);
    if (value === 'unlimited') out[flag] = Number.POSITIVE_INFINITY;
    else if (value !== undefined && /^\d+$/.test(value)) out[flag] = Math.floor(Number(value) / per);
    else throw new SandboxUnavailableError(`cannot read the hard limit "${row}" from /proc/self/limits`);
  }
  return out;
}

/** The bot's own hard limits now (the launcher inherits them). */
export function ownHardLimits(path = '/proc/self/limits'): Record<LimitFlag, number> {
  let text: string;
  try {
    text = readFileSync(path, 'latin1');
  } catch (err) {
    throw new SandboxUnavailableError(`cannot read ${path} (the jail's limits must stay under the bot's own): ${(err as Error).message}`);
  }
  return parseHardLimits(text);
}

/**
 * What the launcher sets: each wanted soft and hard value, never above the bot's own hard limit
 * (a root bot could raise it), and the soft value never above the hard one.
 */
export function clampLimits(wanted: readonly LimitSetting[], own: Record<LimitFlag, number>): LimitSetting[] {
  return wanted.map(({ flag, soft, hard }) => {
    const h = Math.min(hard, own[flag]);
    return { flag, soft: Math.min(soft, h), hard: h };
  });
}
