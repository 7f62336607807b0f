import { existsSync } from 'node:fs';
import { lstat, readdir, realpath } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { UsageError } from '../../common/errors.js';
import { goalWorkspaceDir } from '../../github/goal-workspace.js';
import { RESTING_STATES } from '../../goal/states.js';
import { openStore, resolveDbPath } from '../../ledger/open-ledger.js';
import type { GoalRecord } from '../../ports/goal-ledger.js';
import { workspaceDir, workspaceRoot } from '../../run/paths.js';
import { readGitHubGoal } from '../../steering/issue-goal.js';
import { goalLeaseName } from '../../worker/lease.js';
import { FileLock } from '../../workspace/file-lock.js';
import { MirrorCache } from '../../workspace/mirror-cache.js';
import { sweepLeftovers } from '../../workspace/mirror-disk.js';
import { PackageStores } from '../../workspace/package-stores.js';
import { SetupCache } from '../../workspace/setup-cache.js';
import { diskBytes, formatBytes, listWorkspaces, ownedBy, removeOwned, workspaceFiles } from '../../workspace/workspace-disk.js';

export interface CleanValues {
  finished?: boolean;
  all?: boolean;
}

/** States after which a goal's workspace is only a cache: its checkpoints are on its branch. */
const FINISHED: ReadonlySet<string> = new Set(['LOOP_COMPLETE', 'ESCALATED', 'STOPPED', 'FAILED']);

interface Owner {
  goal: GoalRecord;
  /** A live lease (or, for the App's workspaces, a state the loop runs in): its workspace is never removed. */
  running: boolean;
}

/**
 * `goal-loop clean <goal-id> | --finished | --all`: removes workspaces (and with --all the
 * mirrors, parked trees and setup cache) under the workspace root, and says what it freed. A
 * workspace is removed only under its lock (so no run starts on it meanwhile), never while the
 * ledger says its goal runs, and never through a symlink or outside the root.
 */
export async function cleanCommand(goalId: string | undefined, values: CleanValues): Promise<number> {
  if ([goalId !== undefined, values.finished === true, values.all === true].filter(Boolean).length !== 1) {
    throw new UsageError('clean takes one of <goal-id>, --finished or --all.');
  }
  const given = workspaceRoot();
  const root = await realpath(given).catch(() => undefined);
  if (!root) {
    process.stdout.write(`nothing to clean: ${given} does not exist\n`);
    return 0;
  }
  await sweepLeftovers(root); // what an interrupted clean left half removed
  const owners = await ledgerOwners(root);
  const kept: string[] = [];
  let bytes = 0;
  let removed = 0;
  for (const dir of await listWorkspaces(root)) {
    const owner = owners.get(dir);
    if (!selectedBy(values, goalId, dir, owner)) continue;
    const label = owner ? owner.goal.goalId : basename(dir);
    if (owner?.running) {
      kept.push(`${label} (${owner.goal.state})`);
      continue;
    }
    const lock = new FileLock(`${dir}.lock`);
    if (!(await ownedBy(root, dir)) || !lock.tryAcquireSync()) {
      kept.push(`${label} (in use)`);
      continue;
    }
    try {
      const files = workspaceFiles(dir);
      const size = (await diskBytes(files)) ?? 0;
      for (const f of files) await removeOwned(root, f);
      bytes += size;
      removed += 1;
    } finally {
      lock.releaseSync();
    }
  }
  const parts = removed > 0 || !values.all ? [plural(removed, 'workspace')] : [];
  if (values.all) {
    const freed = await emptyCaches(root);
    bytes += freed.bytes;
    parts.push(...freed.parts);
  }
  if (goalId !== undefined && removed === 0 && kept.length === 0) process.stdout.write(`nothing to clean: no workspace of goal ${goalId} under ${given}\n`);
  else process.stdout.write(`freed ${formatBytes(bytes)}: ${parts.join(', ')}\n`);
  if (kept.length > 0) process.stdout.write(`kept (running): ${kept.join(', ')}\n`);
  return 0;
}

/** --all: every one; --finished: a finished goal's; a goal id: that goal's (by folder name when the ledger has no goal for it). */
function selectedBy(values: CleanValues, goalId: string | undefined, dir: string, owner: Owner | undefined): boolean {
  if (values.all === true) return true;
  if (values.finished === true) return owner !== undefined && FINISHED.has(owner.goal.state);
  return owner ? owner.goal.goalId === goalId : basename(dir) === goalId;
}

/** Workspace folder (real path) → its goal in the ledger, for the goals it holds. */
async function ledgerOwners(root: string): Promise<Map<string, Owner>> {
  // Looking must not create a ledger: no file means no goals.
  if (!process.env.DATABASE_URL && !existsSync(resolveDbPath().path)) return new Map();
  const store = await openStore();
  try {
    const [goals, leases] = await Promise.all([store.ledger.listGoals(), store.ledger.listLeases()]);
    const owners = new Map<string, Owner>();
    for (const goal of goals) {
      const leased = leases.some((l) => l.name === goalLeaseName(goal) && l.live);
      const github = readGitHubGoal(goal.meta);
      // `run` and `mcp` hold the workspace's lock while they work (checked below): a goal the
      // ledger says runs, with its lock free, was a run that died. The App's workers hold a lease.
      owners.set(workspaceDir(root, goal.repo, goal.goalId), { goal, running: leased });
      if (github) owners.set(goalWorkspaceDir(root, github), { goal, running: leased || !RESTING_STATES.has(goal.state) });
    }
    return owners;
  } finally {
    await store.close();
  }
}

/**
 * Every mirror and parked tree not in use, and every setup cache entry: their caches evicted
 * down to nothing, which skips what a running goal holds (a locked or pinned mirror, a ready copy
 * being made). What is freed is measured, before and after.
 */
async function emptyCaches(root: string): Promise<{ bytes: number; parts: string[] }> {
  const mirrors = new MirrorCache({ dir: join(root, 'mirrors'), maxBytes: 0 });
  const setup = new SetupCache({ root: join(root, 'setup-cache'), maxBytes: 0 });
  const stores = new PackageStores({ root: join(root, 'package-stores'), maxBytes: 0 });
  const dirs = [join(root, 'mirrors'), join(root, 'warm'), join(root, 'setup-cache'), join(root, 'package-stores')];
  const count = async () => ({
    mirrors: (await mirrors.list()).length,
    parked: (await mirrors.warm.list()).length,
    setup: await setupEntries(join(root, 'setup-cache')),
    stores: await stores.count(),
  });
  const mine: string[] = [];
  const foreign: string[] = [];
  for (const d of dirs) {
    if (await ownedBy(root, d)) mine.push(d);
    else if (await lstat(d).catch(() => undefined)) foreign.push(d);
  }
  const before = { bytes: (await diskBytes(mine)) ?? 0, ...(await count()) };
  // A cache folder that is a link (or leads out of the root) is left alone, and so is its cache:
  // the mirror cache evicts from mirrors/ and warm/ together.
  if (!foreign.includes(dirs[0]!) && !foreign.includes(dirs[1]!)) await mirrors.evict();
  if (!foreign.includes(dirs[2]!)) await setup.evict();
  if (!foreign.includes(dirs[3]!)) await stores.evict({ all: true });
  const after = { bytes: (await diskBytes(mine)) ?? 0, ...(await count()) };
  const parts = [
    plural(before.setup - after.setup, 'setup cache entry', 'setup cache entries'),
    plural(before.mirrors - after.mirrors, 'mirror'),
    plural(before.parked - after.parked, 'parked tree'),
    plural(before.stores - after.stores, 'package store'),
  ];
  return { bytes: Math.max(0, before.bytes - after.bytes), parts };
}

async function setupEntries(dir: string): Promise<number> {
  let n = 0;
  for (const repo of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (!repo.isDirectory() || repo.name.startsWith('.')) continue;
    n += (await readdir(join(dir, repo.name), { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory() && !e.name.startsWith('.')).length;
  }
  return n;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
