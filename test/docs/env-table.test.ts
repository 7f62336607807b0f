import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_API_URL, DEFAULT_SERVER_URL } from '../../src/action/context.js';
import { DEFAULT_MODEL } from '../../src/agent/anthropic-model.js';
import { DEFAULT_WEBHOOK_PATH } from '../../src/github/server/serve.js';
import { DEFAULT_WRITE_INTERVAL_MS, serviceSettings } from '../../src/github/service-settings.js';
import { userDbPath } from '../../src/ledger/open-ledger.js';
import { workspaceRoot } from '../../src/run/paths.js';
import { DEFAULT_LEASE_MS } from '../../src/worker/worker-pool.js';
import { DEFAULT_CACHE_MB } from '../../src/workspace/mirror-cache.js';
import { PackageStores } from '../../src/workspace/package-stores.js';
import { SetupCache } from '../../src/workspace/setup-cache.js';
import { tempDir } from '../helpers/temp.js';
import { parseMarkdown, ROOT, readDoc } from './markdown.js';

// The README's environment variable table is the whole truth about the environment: every
// variable the code reads is a row, every row is read (by our code, or by Probot for its own
// settings), and every default the table states is the code's.

const NAME = /^[A-Z][A-Z0-9_]+$/;

/** Variables our code reads: `process.env.X`, `env.X`, `hostEnv?.X`, `env['X']` (assignments are writes, not reads). */
function readByCode(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const files = (readdirSync(join(ROOT, 'src'), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
  for (const file of files) {
    const text = readFileSync(join(ROOT, 'src', file), 'utf8');
    for (const m of text.matchAll(/\b\w*[eE]nv\??\.(?:\[['"])?([A-Z][A-Z0-9_]+)\b(?:['"]\])?(?!\s*=(?!=))|\b\w*[eE]nv\??\[['"]([A-Z][A-Z0-9_]+)['"]\](?!\s*=(?!=))/g)) {
      const name = m[1] ?? m[2]!;
      found.set(name, [...(found.get(name) ?? []), `src/${file}`]);
    }
  }
  return found;
}

/** Read by the code but not settings of goal-loop's, so not rows of the table. */
const NOT_SETTINGS: Record<string, string> = {
  PATH: "the host's program search path (git, bwrap, rg are found on it)",
  GOAL_LOOP_CRASH_AT: 'a crash point for the crash tests, documented in ARCHITECTURE.md',
};

/** Probot's own settings that the table lists: Probot reads them, not our code (checked below). */
const PROBOT_READS = ['GHE_HOST', 'GHE_PROTOCOL', 'GH_ORG'];

interface Row {
  no: number;
  names: string[];
  /** The default column, backticks removed; '' when the variable has none. */
  default: string;
}

function envTable(): Row[] {
  const md = readDoc('README.md');
  const lines = md.split('\n');
  const start = lines.indexOf('### Environment variables');
  expect(start, 'README has no "### Environment variables" heading').toBeGreaterThan(0);
  const end = lines.findIndex((l, i) => i > start && /^#{1,3} /.test(l));
  const rows: Row[] = [];
  const inFence = new Set(parseMarkdown(md).fences.flatMap((f) => f.body.map((b) => b.no)));
  let header: string[] | undefined;
  for (let i = start + 1; i < end; i++) {
    const line = lines[i]!;
    if (!line.startsWith('|') || inFence.has(i + 1)) continue;
    const cells = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    if (!header) {
      header = cells;
      expect(header, 'the table has columns variable, default, meaning').toEqual(['variable', 'default', 'meaning']);
      continue;
    }
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue;
    const names = [...cells[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    expect(names.length, `README:${i + 1}: a row names its variables in backticks`).toBeGreaterThan(0);
    for (const n of names) expect(n, `README:${i + 1}`).toMatch(NAME);
    rows.push({ no: i + 1, names, default: cells[1]!.replace(/`/g, '') });
  }
  expect(rows.length).toBeGreaterThan(10);
  return rows;
}

function source(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** The one literal `pattern` captures in `path`: where a default lives when the code does not export it. */
function literal(path: string, pattern: RegExp): string {
  const m = pattern.exec(source(path));
  expect(m, `${path} no longer matches ${pattern}: where is the default now?`).not.toBeNull();
  const raw = m![1]!.replace(/_/g, '');
  return /^[\d.e]+$/.test(raw) ? String(Number(raw)) : raw; // 30_000 and 1e3 as the README writes them
}

const tilde = (p: string) => (p.startsWith(homedir()) ? `~${p.slice(homedir().length)}` : p);

/** Each default the table states, from the code: the default column must contain every string. */
function codeDefaults(): Record<string, string[]> {
  return {
    PORT: [literal('src/github/server/serve.ts', /env\.PORT \?\? ''\s*,\s*10\)\s*\|\|\s*(\d+)/)],
    WEBHOOK_PATH: [DEFAULT_WEBHOOK_PATH],
    GHE_PROTOCOL: [literal('node_modules/probot/lib/create-probot.js', /GHE_PROTOCOL: "(\w+)"/)],
    GOAL_LOOP_CONCURRENCY: [String(serviceSettings({}).concurrency)],
    GOAL_LOOP_LEASE_MS: [String(DEFAULT_LEASE_MS)],
    GOAL_LOOP_POLL_MS: [literal('src/worker/worker-pool.ts', /opts\.pollMs \?\? ([\d_]+)/)],
    GOAL_LOOP_STATUS_INTERVAL_MS: [literal('src/github/github-forge.ts', /minUpdateIntervalMs \?\? ([\d_]+)/)],
    GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: [String(DEFAULT_WRITE_INTERVAL_MS)],
    GOAL_LOOP_GITHUB_WRITES_PER_MINUTE: [String(serviceSettings({}).writeLimits.windows[0]!.max)],
    GOAL_LOOP_GITHUB_WRITES_PER_HOUR: [String(serviceSettings({}).writeLimits.windows[1]!.max)],
    GOAL_LOOP_QUEUE_REPORT_MS: [String(serviceSettings({}).queueReport.intervalMs), '0: off'],
    LOG_LEVEL: [literal('src/cli/actions/serve.ts', /LOG_LEVEL \?\? '(\w+)'/), literal('src/cli/actions/worker.ts', /LOG_LEVEL \?\? '(\w+)'/), literal('src/cli/logging.ts', /LOG_LEVEL \?\? '(\w+)'/)],
    GOAL_LOOP_DB: [userDbPath({ XDG_STATE_HOME: '$XDG_STATE_HOME' }), tilde(userDbPath({}))],
    XDG_STATE_HOME: [tilde(dirname(dirname(userDbPath({}))))],
    GOAL_LOOP_WORKSPACES: [workspaceRoot({ XDG_CACHE_HOME: '$XDG_CACHE_HOME' }), tilde(workspaceRoot({}))],
    XDG_CACHE_HOME: [tilde(dirname(dirname(workspaceRoot({}))))],
    GOAL_LOOP_CACHE_MB: [String(DEFAULT_CACHE_MB)],
    GOAL_LOOP_SETUP_CACHE_MB: [literal('src/workspace/setup-cache.ts', /DEFAULT_SETUP_CACHE_MB = ([\d_]+)/), '0: off'],
    GOAL_LOOP_STORE_MB: [literal('src/workspace/package-stores.ts', /DEFAULT_STORE_MB = ([\d_]+)/), '0: a throwaway store per setup'],
    GOAL_LOOP_MODEL: [DEFAULT_MODEL],
    GITHUB_API_URL: [DEFAULT_API_URL],
    GITHUB_SERVER_URL: [DEFAULT_SERVER_URL],
  };
}

describe("the README's environment variable table", () => {
  it('has every variable the code reads', () => {
    const documented = new Set(envTable().flatMap((r) => r.names));
    const missing = [...readByCode()].filter(([name]) => !documented.has(name) && !(name in NOT_SETTINGS)).map(([name, files]) => `${name} (${[...new Set(files)].join(', ')})`);
    expect(missing).toEqual([]);
  });

  it('has only variables that are read: by our code, or by Probot for its own settings', () => {
    const code = readByCode();
    const unread = envTable()
      .flatMap((r) => r.names)
      .filter((n) => !code.has(n) && !PROBOT_READS.includes(n));
    expect(unread).toEqual([]);
  });

  it("lists as Probot's only what Probot reads", () => {
    const probot = (readdirSync(join(ROOT, 'node_modules/probot/lib'), { recursive: true }) as string[])
      .filter((f) => f.endsWith('.js'))
      .map((f) => source(`node_modules/probot/lib/${f}`))
      .join('\n');
    for (const name of PROBOT_READS) expect(probot, name).toMatch(new RegExp(`env\\.${name}\\b|\\b${name}:`));
  });

  it('states the code’s default for each variable that has one, and no default the code does not have', () => {
    const defaults = codeDefaults();
    const stated = new Map(envTable().flatMap((r) => r.names.map((n) => [n, r] as const)));
    const wrong: string[] = [];
    for (const [name, row] of stated) {
      const want = defaults[name];
      if (!want) {
        if (row.default) wrong.push(`README:${row.no}: ${name} states a default ("${row.default}") this test does not know the code for`);
        continue;
      }
      for (const w of want) if (!row.default.includes(w)) wrong.push(`README:${row.no}: ${name}'s default "${row.default}" does not say ${w}`);
    }
    for (const name of Object.keys(defaults)) if (!stated.has(name)) wrong.push(`${name} has a default but no row`);
    expect(wrong).toEqual([]);
  });

  it('says 0 turns the setup cache off, as the code does', () => {
    expect(SetupCache.fromEnv('/nonexistent', { GOAL_LOOP_SETUP_CACHE_MB: '0' })).toBeUndefined();
  });

  it('says 0 gives every setup a throwaway package store, as the code does', async () => {
    const root = await tempDir();
    const grant = await PackageStores.fromEnv(root, { GOAL_LOOP_STORE_MB: '0' }).claim('/r/app', 'main', true);
    expect(grant.kept).toBe(false);
    await grant.release();
  });

  it('names ARCHITECTURE.md as where the crash points are documented', () => {
    expect(readDoc('ARCHITECTURE.md')).toContain('GOAL_LOOP_CRASH_AT');
  });
});

describe('.env.example', () => {
  const example = () => [...readDoc('.env.example').matchAll(/^# ([A-Z][A-Z0-9_]+)=(.*)$/gm)].map((m) => ({ name: m[1]!, value: m[2]!.trim() }));

  it('names only variables of the table', () => {
    const documented = new Set(envTable().flatMap((r) => r.names));
    expect(
      example()
        .map((e) => e.name)
        .filter((n) => !documented.has(n)),
    ).toEqual([]);
    expect(example().length).toBeGreaterThan(10);
  });

  it('shows a default only as the default: a value for a variable with a default is that default, and one with no single default is left empty', () => {
    const rows = new Map(envTable().flatMap((r) => r.names.map((n) => [n, r] as const)));
    const wrong: string[] = [];
    for (const { name, value } of example()) {
      const row = rows.get(name);
      if (!row?.default || !value) continue;
      const first = row.default.split(/[\s,;(]/)[0]!;
      if (first === 'unset:' || first === 'unset') wrong.push(`${name}=${value}: its default is not one value ("${row.default}"); leave it empty`);
      else if (value !== first) wrong.push(`${name}=${value}: the default is ${first}`);
    }
    expect(wrong).toEqual([]);
  });
});
