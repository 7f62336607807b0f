import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parseRepoConfig } from '../src/config/repo-config.js';
import { validateGoalSpec } from '../src/goal/parse.js';
import { openSqliteStore, type Store } from '../src/ledger/open-ledger.js';
import { openPostgresStore } from '../src/ledger/postgres/open-postgres.js';
import { runConfiguredGoal } from '../src/run/run-configured-goal.js';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { WorkerPool } from '../src/worker/worker-pool.js';
import { GitWorkspace } from '../src/workspace/git-workspace.js';
import { adminQuery, type Cluster, startThrowawayCluster, withDatabase } from '../test/helpers/postgres-cluster.js';
import { makeBareRepo } from './bench-repo.js';
import { QuietForge } from './quiet-forge.js';
import type { Verdict } from './stats.js';

const GOALS = 20;
const TASKS = 5;
const REPOS = 5;
const CONCURRENCY = [1, 2, 4];
/** Each task waits on I/O (a sleep stands for a test run or a package download). */
const TASK_SLEEP_S = 0.25;

const silent = pino({ level: 'silent' });

/**
 * Goals per minute through the durable queue and leased workers: 20 goals of 5 quick tasks over
 * 5 local repositories, at concurrency 1, 2 and 4, on SQLite and PostgreSQL; with the peak RSS
 * of this process (which runs the pool) per setting.
 */
export async function throughput(): Promise<Verdict[]> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-tput-'));
  let cluster: Cluster | undefined;
  try {
    const repos = Array.from({ length: REPOS }, (_, i) => makeRepo(join(root, `repo-${i}`)));
    let pgUrl = process.env.DATABASE_URL;
    if (!pgUrl) {
      cluster = await startThrowawayCluster();
      pgUrl = cluster.url;
    }
    process.stdout.write(`throughput: ${GOALS} goals x ${TASKS} tasks (sleep ${TASK_SLEEP_S}s each) over ${REPOS} repositories, sandbox process\n`);
    const verdicts: Verdict[] = [];
    for (const kind of ['sqlite', 'postgres'] as const) {
      const perMinute = new Map<number, number>();
      let peak = 0;
      for (const concurrency of CONCURRENCY) {
        const label = `${kind}-c${concurrency}`;
        const store = kind === 'sqlite' ? join(root, `${label}.db`) : await database(pgUrl, label);
        // Each setting runs in a process of its own, so its peak RSS is that setting's alone.
        const r = settingInChild({ kind, store, repos, dir: join(root, label), concurrency, label });
        perMinute.set(concurrency, r.goalsPerMinute);
        peak = Math.max(peak, r.peakRssMb);
        process.stdout.write(
          `  ${kind.padEnd(8)} concurrency ${concurrency}: ${r.goalsPerMinute.toFixed(1).padStart(6)} goals/min  (${(r.ms / 1000).toFixed(1)} s)  peak RSS ${r.peakRssMb.toFixed(0)} MB\n`,
        );
      }
      const speedup = perMinute.get(4)! / perMinute.get(1)!;
      process.stdout.write(`  ${kind.padEnd(8)} 4 workers vs 1: ${speedup.toFixed(2)}x\n`);
      verdicts.push({ name: `throughput ${kind}`, pass: speedup >= 2.5, detail: `${speedup.toFixed(2)}x goals/min at 4 workers vs 1 (target >= 2.5x)` });
      verdicts.push({ name: `peak RSS ${kind}`, pass: peak < 300, detail: `${peak.toFixed(0)} MB (target < 300 MB)` });
    }
    return verdicts;
  } finally {
    cluster?.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

interface Setting {
  kind: 'sqlite' | 'postgres';
  /** The SQLite file or the PostgreSQL URL. */
  store: string;
  repos: string[];
  dir: string;
  concurrency: number;
  label: string;
}

interface SettingResult {
  goalsPerMinute: number;
  ms: number;
  peakRssMb: number;
}

function settingInChild(setting: Setting): SettingResult {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), JSON.stringify(setting)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 });
  return JSON.parse(out.trim().split('\n').at(-1)!) as SettingResult;
}

/** The child: opens the store, runs the setting, prints its result as one JSON line. */
async function childMain(setting: Setting): Promise<void> {
  const store = setting.kind === 'sqlite' ? openSqliteStore(setting.store) : await openPostgresStore(setting.store);
  try {
    const r = await runSetting(store, setting.repos, setting.dir, setting.concurrency, setting.label);
    process.stdout.write(`${JSON.stringify(r)}\n`);
  } finally {
    await store.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2]) {
  childMain(JSON.parse(process.argv[2]) as Setting).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`throughput setting failed: ${String(err)}\n`);
      process.exit(1);
    },
  );
}

async function runSetting(store: Store, repos: string[], dir: string, concurrency: number, label: string): Promise<SettingResult> {
  const sandbox = new ProcessSandbox();
  const config = parseRepoConfig({});
  const specs = new Map<string, { spec: ReturnType<typeof validateGoalSpec>; repo: string }>();
  for (let g = 0; g < GOALS; g++) {
    const goalId = `${label}-g${g}`;
    const repo = repos[g % repos.length]!;
    const spec = validateGoalSpec({
      goal_id: goalId,
      objective: `benchmark goal ${g}`,
      tasks: Array.from({ length: TASKS }, (_, t) => ({
        id: `t${t}`,
        title: `step ${t}`,
        run: `sleep ${TASK_SLEEP_S}; echo ${t} > out-${t}.txt`,
        verification: `test -s out-${t}.txt`,
        ...(t > 0 ? { dependencies: [`t${t - 1}`] } : {}),
      })),
    });
    specs.set(goalId, { spec, repo });
    await store.ledger.upsertGoal({ repo, goalId }, { spec, branch: `goal/${goalId}` });
  }
  let done = 0;
  const pool = new WorkerPool({
    ledger: store.ledger,
    queue: store.queue,
    logger: silent,
    concurrency,
    pollMs: 50,
    work: async (job, ctx) => {
      const { spec, repo } = specs.get(job.key.goalId)!;
      const workspace = new GitWorkspace({
        remote: repo,
        dir: join(dir, job.key.goalId),
        goalId: spec.goal_id,
        branch: `goal/${spec.goal_id}`,
        identity: { name: 'goal-loop', email: 'bench@example.com' },
      });
      const result = await runConfiguredGoal({ repo, spec, config, ledger: store.ledger, workspace, sandbox, forge: new QuietForge(), logger: silent, abandon: ctx.abandon, fence: ctx.fence });
      if (result.status !== 'LOOP_COMPLETE') throw new Error(`${spec.goal_id} ended ${result.status}: ${result.stop_reason}`);
      await workspace.release?.();
      done += 1;
    },
  });
  let peak = process.memoryUsage.rss();
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  const t0 = performance.now();
  for (const [goalId, { repo }] of specs) await store.queue.enqueue({ key: { repo, goalId }, mode: 'run', priority: 'P2' });
  pool.start();
  await pool.idle();
  const elapsed = performance.now() - t0;
  clearInterval(sampler);
  await pool.close(1000);
  if (done !== GOALS) throw new Error(`only ${done} of ${GOALS} goals completed`);
  return { goalsPerMinute: (GOALS / elapsed) * 60_000, ms: elapsed, peakRssMb: peak / 1024 / 1024 };
}

async function database(url: string, label: string): Promise<string> {
  const name = `goal_loop_bench_${label.replace(/-/g, '_')}_${process.pid}`;
  await adminQuery(url, `DROP DATABASE IF EXISTS "${name}"`);
  await adminQuery(url, `CREATE DATABASE "${name}"`);
  return withDatabase(url, name);
}

function makeRepo(root: string): string {
  return makeBareRepo(root, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}.txt`, `file ${i}\n`])));
}
