import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { ProbotOctokit } from 'probot';
import { createSampleRepo } from '../src/demo/sample-repo.js';
import { goalLoopOctokit } from '../src/github/octokit.js';
import { createAppRuntime, type GoalLoopRuntime } from '../src/github/runtime.js';
import { serviceSettings } from '../src/github/service-settings.js';
import { writePriorityOf } from '../src/github/write-budget-plugin.js';
import type { Store } from '../src/ledger/open-ledger.js';
import { openPostgresStore } from '../src/ledger/postgres/open-postgres.js';
import { ceilingOf, DEFAULT_WRITE_LIMITS, type WriteLimits, type WritePriority } from '../src/ports/write-budget.js';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { STATE_LABELS } from '../src/steering/labels.js';
import { type FakeGitHub, fakeGitHub } from '../test/helpers/fake-github.js';
import { git } from '../test/helpers/git.js';
import { INSTALLATION, OWNER, privateKey, REPO, SECRET, THREE_STEP_GOAL } from '../test/helpers/github-app-harness.js';
import { adminQuery, type Cluster, startThrowawayCluster, withDatabase } from '../test/helpers/postgres-cluster.js';
import { issuesLabeled, toEvent } from '../test/helpers/webhook-payloads.js';
import { median, printVerdicts, type Verdict } from './stats.js';

/**
 * Goals per minute of a burst of goals under the shared GitHub write budget, and writes per goal.
 *
 * Setup: GOALS issues labelled `goal` at once (a 3-step goal each, run steps that pass), the GitHub
 * fake, one PostgreSQL store, `serve` (webhooks) plus 3 workers of 1 slot each. The four are
 * in-process runtimes built by createAppRuntime, as `serve` and `worker` build theirs, each with
 * its own store connection and its own Octokit taking every write from the one budget in the
 * store. The budget is shared through PostgreSQL exactly as between processes (each decision is a
 * transaction on the database's clock), so separate processes would show nothing more and would
 * cost this 2-core machine three more Node heaps.
 *
 * Time is scaled for the budget only, honestly: production allows 70 writes a minute and 450 an
 * hour (80 % of each for anything but escalations), so a burst of a few hundred writes needs an
 * hour of real time. Here every duration of the budget's rule is divided by SCALE: its windows
 * (same maxima and shares), the per-process write spacing, its retry jitter and retry-after unit.
 * The queue report's allowance of position refreshes (a tenth of the minute's budget) is scaled
 * with it. The code is the production code, given WriteLimits and Octokit tuning. Not scaled: the
 * work (clone, steps, checkpoints, pushes) and what is paced by it (the status-edit interval, 3 s;
 * the queue report's interval, 5 s, and the 2 s a goal waits before it is shown queued), so
 * relative to the budget the work runs SCALE times slower than in production. Hence a bracket for
 * the production-equivalent time of the burst:
 *   - about the scaled run's time × SCALE at most (its work inflated with the budget's time);
 *   - at least what the limits force on the writes it sent: with c the ceiling of a window of w
 *     of a priority (whoever sent what fills it), the (n·c + 1)-th write of that priority or lower
 *     waits n·w after the first.
 * The baseline, in the same run, is the same burst with the same settings and the budget's
 * windows unlimited (still taken from the store on every write): the ratio is what the budget
 * costs in throughput at time / SCALE.
 *
 * 60 goals (the default; BENCH_BURST_GOALS sets another size): about 4 minutes for both runs on
 * this 2-core machine (~3 s of CPU per goal, most of it spawning git and the steps). Its ~500
 * writes pass the hour's ceiling of 360 for anything but escalations, so in production the hour
 * window binds (whether the scaled run reaches a ceiling depends on how fast the machine works:
 * the peak lines say).
 */

const GOALS = Number(process.env.BENCH_BURST_GOALS ?? 60);
const WORKERS = 3;
const SCALE = 60;
const DEADLINE_MS = 600_000;

interface BurstResult {
  ms: number;
  goalsPerMinute: number;
  perGoal: number[];
  kinds: Record<string, number>;
  unattributed: number;
  /** When each write left (ms from the start), as GitHub would count them. */
  writes: number[];
  /** How many writes of each priority the budget saw. */
  byPriority: Record<WritePriority, number>;
}

export async function writeBudgetBurst(): Promise<Verdict[]> {
  let cluster: Cluster | undefined;
  try {
    let pgUrl = process.env.DATABASE_URL;
    if (!pgUrl) {
      cluster = await startThrowawayCluster();
      pgUrl = cluster.url;
    }
    const budget = scaled(DEFAULT_WRITE_LIMITS);
    const unlimited: WriteLimits = { ...budget, windows: budget.windows.map((w) => ({ ms: w.ms, max: 1_000_000_000 })) };
    process.stdout.write(`write budget burst: ${GOALS} goals x 3 steps at once, serve + ${WORKERS} workers (1 slot each, in-process) on PostgreSQL, GitHub fake, sandbox process\n`);
    const off = await burst(pgUrl, 'off', unlimited);
    const on = await burst(pgUrl, 'on', budget);
    const mean = (r: BurstResult) => r.perGoal.reduce((s, n) => s + n, 0) / r.perGoal.length;
    const ratio = on.goalsPerMinute / off.goalsPerMinute;
    const upperMin = (on.ms * SCALE) / 60_000;
    const lowerMin = leastTimeMs(on.byPriority, DEFAULT_WRITE_LIMITS) / 60_000;
    const peaks = budget.windows.map((w) => ({ w, peak: peakInWindow(on.writes, w.ms) }));
    const edits = (r: BurstResult) => (r.kinds['PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}'] ?? 0) / GOALS;
    const line = (label: string, r: BurstResult) =>
      `  ${label}  ${r.goalsPerMinute.toFixed(1).padStart(5)} goals/min (${(r.ms / 1000).toFixed(1)} s); writes per goal mean ${mean(r).toFixed(1)}, median ${median(r.perGoal)}, max ${Math.max(...r.perGoal)} (status edits ${edits(r).toFixed(1)}); ${r.unattributed} writes of no goal\n`;
    process.stdout.write(
      `${line('budget off (windows unlimited)   ', off)}${line(`budget on, production ÷ ${SCALE}      `, on)}` +
        `  budget on vs off                    ${ratio.toFixed(2)}x goals/min\n` +
        peaks
          .map(
            ({ w, peak }) =>
              `  peak writes in any ${fmtWindow(w.ms * SCALE).padEnd(5)} (${fmtWindow(w.ms)} here)   ${peak} of ${w.max} (${((100 * peak) / w.max).toFixed(0)} %; ceilings: status edits ${ceilingOf(w, budget.shares.background)}, other writes but escalations ${ceilingOf(w, budget.shares.normal)})\n`,
          )
          .join('') +
        `  production-equivalent               ${(GOALS / upperMin).toFixed(2)} to ${(GOALS / lowerMin).toFixed(2)} goals/min (the burst in ${lowerMin.toFixed(0)} to ${upperMin.toFixed(0)} min: its ${on.writes.length} writes (${on.byPriority.background} status edits) under the limits, to the run × ${SCALE})\n` +
        `  writes per goal by kind, budget on:\n${Object.entries(on.kinds)
          .sort((a, b) => b[1] - a[1])
          .map(([kind, n]) => `    ${(n / GOALS).toFixed(2).padStart(5)}  ${kind}\n`)
          .join('')}`,
    );
    return [
      {
        name: 'write budget held',
        pass: peaks.every((p) => p.peak <= p.w.max),
        detail: `${peaks.map((p) => `${p.peak} of ${p.w.max} per ${fmtWindow(p.w.ms * SCALE)}`).join(', ')} across serve + ${WORKERS} workers (target: never over)`,
      },
      { name: 'writes per goal (burst)', pass: mean(on) <= 12, detail: `mean ${mean(on).toFixed(1)}, max ${Math.max(...on.perGoal)} over ${GOALS} goals under the budget (target mean <= 12)` },
      {
        name: 'goals/min under the budget',
        pass: true,
        detail: `${(GOALS / upperMin).toFixed(2)} to ${(GOALS / lowerMin).toFixed(2)} production-equivalent; ${ratio.toFixed(2)}x the unbudgeted rate at time ÷ ${SCALE} (informational)`,
      },
    ];
  } finally {
    cluster?.stop();
  }
}

/** The production limits with every window SCALE times shorter (same maxima and shares). */
function scaled(limits: WriteLimits): WriteLimits {
  return { ...limits, windows: limits.windows.map((w) => ({ ms: w.ms / SCALE, max: w.max })) };
}

async function burst(pgUrl: string, label: string, limits: WriteLimits): Promise<BurstResult> {
  const root = mkdtempSync(join(tmpdir(), `goal-loop-bench-budget-${label}-`));
  const url = await database(pgUrl, label);
  const stores: Store[] = [];
  const runtimes: GoalLoopRuntime[] = [];
  const issues = Array.from({ length: GOALS }, (_, i) => ({ number: i + 1, title: 'Three steps', body: THREE_STEP_GOAL, user: 'alice', labels: ['goal'] }));
  const fake = fakeGitHub({ owner: OWNER, repo: REPO, installationId: INSTALLATION, collaborators: { alice: 'write' }, issues, labels: [...STATE_LABELS], strictAuth: true });
  try {
    const sample = await createSampleRepo(join(root, 'sample'));
    const writes: Array<{ at: number; priority: WritePriority }> = [];
    // GOAL_LOOP_QUEUE_REPORT_MS=0 in the environment runs the burst without the queue report.
    const { queueReport, writeMinTimeMs } = serviceSettings(process.env);
    const t0 = performance.now();
    const start = async (role: 'webhooks' | 'workers', i: number) => {
      const store = await openPostgresStore(url);
      stores.push(store);
      const { probot, runtime } = await createAppRuntime(
        {
          store,
          workspaceRoot: join(root, `process-${i}`),
          sandboxFor: async () => new ProcessSandbox(),
          concurrency: 1,
          queueReport: { ...queueReport, refreshesPerMinute: queueReport.refreshesPerMinute * SCALE },
          workerId: `bench-${role}-${i}`,
          env: {
            APP_ID: '1',
            PRIVATE_KEY: privateKey(),
            WEBHOOK_SECRET: SECRET,
            LOG_LEVEL: 'silent',
            GOAL_LOOP_POLL_MS: '50',
          },
          probotOverrides: { overrides: { Octokit: octokitFor(store, limits, writeMinTimeMs), request: { fetch: stampingFetch(writes) } } },
        },
        role,
        `bench-${role}-${i}`,
      );
      runtimes.push(runtime);
      return { probot, runtime };
    };
    const serve = await start('webhooks', 0);
    for (let i = 1; i <= WORKERS; i++) await start('workers', i);
    await serve.probot.load(serve.runtime.appFn);
    const began = performance.now();
    await Promise.all(
      issues.map((issue) =>
        serve.probot.receive(toEvent('issues', issuesLabeled({ owner: OWNER, repo: REPO, installationId: INSTALLATION, cloneUrl: sample.bare, sender: 'alice', issue, label: 'goal' }), randomUUID())),
      ),
    );
    await allReady(fake, began);
    // The last goal's final writes (its check run, the PR marked ready) follow its label.
    await Promise.all(runtimes.map((r) => r.idle()));
    const ms = performance.now() - began;
    const perGoal = issues.map((issue) => writesOfGoal(fake, sample.bare, issue.number));
    const attributed = perGoal.reduce((s, n) => s + n, 0);
    if (fake.violations.length > 0 || fake.unhandled.length > 0) throw new Error(`GitHub API misuse:\n${[...fake.violations, ...fake.unhandled].slice(0, 10).join('\n')}`);
    return {
      ms,
      goalsPerMinute: (GOALS / ms) * 60_000,
      perGoal,
      kinds: fake.writesByKind(),
      unattributed: fake.writes().length - attributed,
      writes: writes.map((w) => w.at - t0),
      byPriority: { urgent: count(writes, 'urgent'), normal: count(writes, 'normal'), background: count(writes, 'background') },
    };
  } finally {
    await Promise.all(runtimes.map((r) => r.close(1000)));
    await Promise.all(stores.map((s) => s.close()));
    fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The production Octokit with production tuning divided by SCALE, taking its writes from `store`'s budget. */
function octokitFor(store: Store, limits: WriteLimits, productionWriteMinTimeMs: number): typeof ProbotOctokit {
  return goalLoopOctokit({
    writeMinTimeMs: Math.round(productionWriteMinTimeMs / SCALE),
    retryAfterBaseMs: Math.round(1000 / SCALE),
    writeBudget: { store: store.ledger, limits, take: { jitterMs: () => (Math.random() * 250) / SCALE } },
  });
}

/** fetch, noting the time each write leaves (as GitHub would count it) and its budget priority. */
function stampingFetch(writes: Array<{ at: number; priority: WritePriority }>): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const method = (init?.method ?? 'GET').toUpperCase();
    const body = typeof init?.body === 'string' ? init.body : '';
    const query = url.pathname === '/graphql' ? ((JSON.parse(body || '{}') as { query?: string }).query ?? '') : undefined;
    const priority = url.pathname.includes('/access_tokens') ? undefined : writePriorityOf({ method, url: url.pathname, query });
    if (priority) writes.push({ at: performance.now(), priority });
    return globalThis.fetch(input, init);
  };
}

/** Waits until every issue shows `goal:review` (its PR ready), failing on a goal that stopped otherwise. */
async function allReady(fake: FakeGitHub, began: number): Promise<void> {
  while (true) {
    const labels = Array.from({ length: GOALS }, (_, i) => fake.labels(i + 1));
    const ready = labels.filter((l) => l.includes('goal:review')).length;
    const stuck = labels.findIndex((l) => l.some((x) => x === 'goal:escalated' || x === 'goal:stopped' || x === 'goal:paused'));
    if (stuck >= 0) throw new Error(`goal #${stuck + 1} ended ${labels[stuck]!.join(', ')}`);
    if (ready === GOALS) return;
    if (performance.now() - began > DEADLINE_MS) throw new Error(`only ${ready} of ${GOALS} goals ready after ${DEADLINE_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The fake's writes that belong to issue `n`: the issue, its PR, and its branch's check runs. */
function writesOfGoal(fake: FakeGitHub, bare: string, n: number): number {
  const branch = `goal/${n}-three-steps`;
  const pulls = fake.pulls.filter((p) => p.head === branch).map((p) => p.number);
  const shas = git(bare, 'rev-list', branch).split('\n').filter(Boolean);
  return fake.writesFor({ issue: n, pulls, shas }).length;
}

/** The most writes in any span of `windowMs`. */
function peakInWindow(writes: number[], windowMs: number): number {
  const at = [...writes].sort((a, b) => a - b);
  let peak = 0;
  let first = 0;
  for (let i = 0; i < at.length; i++) {
    while (at[i]! - at[first]! >= windowMs) first += 1;
    peak = Math.max(peak, i - first + 1);
  }
  return peak;
}

/**
 * The least time writes of these priorities can take under `limits`, first to last: a window of w
 * in which priority p sees the ceiling c holds at most c writes of p or lower (whoever sent what
 * fills it), so the (n·c + 1)-th of them goes n·w after the first.
 */
function leastTimeMs(byPriority: Record<WritePriority, number>, limits: WriteLimits): number {
  let atOrBelow = 0;
  let least = 0;
  for (const priority of ['background', 'normal', 'urgent'] as const) {
    atOrBelow += byPriority[priority];
    if (byPriority[priority] === 0) continue;
    for (const w of limits.windows) least = Math.max(least, Math.floor((atOrBelow - 1) / ceilingOf(w, limits.shares[priority])) * w.ms);
  }
  return least;
}

const count = (writes: Array<{ priority: WritePriority }>, priority: WritePriority) => writes.filter((w) => w.priority === priority).length;

function fmtWindow(ms: number): string {
  return ms >= 3_600_000 ? `${ms / 3_600_000} h` : ms >= 60_000 ? `${ms / 60_000} min` : `${ms / 1000} s`;
}

async function database(url: string, label: string): Promise<string> {
  const name = `goal_loop_bench_budget_${label}_${process.pid}`;
  await adminQuery(url, `DROP DATABASE IF EXISTS "${name}"`);
  await adminQuery(url, `CREATE DATABASE "${name}"`);
  return withDatabase(url, name);
}

// Run alone: `node dist/bench/write-budget-burst.js` after `tsc -p tsconfig.bench.json`.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  void writeBudgetBurst().then((verdicts) => {
    printVerdicts(verdicts);
    process.exitCode = verdicts.every((v) => v.pass) ? 0 : 1;
  });
}
