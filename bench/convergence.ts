import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { Probot } from 'probot';
import { createSampleRepo } from '../src/demo/sample-repo.js';
import { goalLoopOctokit } from '../src/github/octokit.js';
import { createRuntime, type GoalLoopRuntime } from '../src/github/runtime.js';
import { openSqliteStore, type Store } from '../src/ledger/open-ledger.js';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { STATE_LABELS } from '../src/steering/labels.js';
import { type FakeGitHub, fakeGitHub } from '../test/helpers/fake-github.js';
import { type GitHubBridge, githubBridge } from '../test/helpers/github-bridge.js';
import { issuesLabeled, toEvent } from '../test/helpers/webhook-payloads.js';
import { median, type Verdict } from './stats.js';

/*
 * The pieces of test/helpers/worker-process.ts and github-app-harness.ts that a benchmark needs,
 * rebuilt here without vitest (those helpers register their clean-up with onTestFinished).
 */

const OWNER = 'octo-org';
const REPO = 'widgets';
const INSTALLATION = 4242;
const SECRET = 'bench-webhook-secret';
const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

/** Kills, R times. */
const TRIALS = 5;
/** GOAL_LOOP_LEASE_MS of both workers. */
const LEASE_MS = 2000;
/** Start-ups of an idle worker measured for the baseline. */
const STARTUPS = 3;
const POLL_MS = 20;
const READY_LINE = 'goal-loop worker is running';
const FIRST_ISSUE = 41;

const silent = pino({ level: 'silent' });

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() when the process's exit was observed. */
  at: number;
}

interface Worker {
  child: ChildProcess;
  /** Resolves on the process's `exit` event (not `close`, which also waits for its pipes). */
  exited: Promise<Exit>;
  /** performance.now() when READY_LINE appeared on its output. */
  ready: Promise<number>;
  output(): string;
}

/**
 * Convergence after a killed worker, against the lease: worker A dies (SIGKILL) right after a
 * goal's resting state and its `finished` effect are written, before GitHub hears of it; worker B
 * starts at once, and the time from A's death until GitHub shows the goal as finished (PR ready,
 * `goal:review` alone) is measured. The design: the effect counts as orphaned once it is a lease
 * old and A's lease has lapsed (both at most one lease after the kill), B's sweep runs when its
 * pool starts and then every lease/3.
 */
export async function convergence(): Promise<Verdict[]> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-conv-'));
  const workers: Worker[] = [];
  let fake: FakeGitHub | undefined;
  let bridge: GitHubBridge | undefined;
  let store: Store | undefined;
  let runtime: GoalLoopRuntime | undefined;
  try {
    const repo = await createSampleRepo(join(root, 'sample'));
    const numbers = Array.from({ length: TRIALS }, (_, i) => FIRST_ISSUE + i);
    const issues = numbers.map((number) => ({
      number,
      title: `Converge ${number}`,
      body: goalBlock(`objective: Converge after a killed worker\ntasks:
  - { id: t1, title: One, run: "echo 1 > t1", verification: "test -f t1" }
  - { id: t2, title: Two, run: "echo 2 > t2", verification: "test -f t2", dependencies: [t1] }`),
      user: 'alice',
      labels: ['goal'],
    }));
    fake = fakeGitHub({ owner: OWNER, repo: REPO, installationId: INSTALLATION, collaborators: { alice: 'write' }, issues, strictAuth: true });
    fake.setFile('.github/goal-loop.yml', 'sandbox: process\n');
    bridge = await githubBridge();
    const dbPath = join(root, 'ledger.db');
    store = openSqliteStore(dbPath);
    const key = privateKey();
    const workspaces = join(root, 'workspaces');
    const start = (env: Record<string, string>): Worker => {
      const w = startWorker({
        APP_ID: '1',
        PRIVATE_KEY: key,
        ...bridge!.env,
        GOAL_LOOP_DB: dbPath,
        GOAL_LOOP_WORKSPACES: workspaces,
        GOAL_LOOP_LEASE_MS: String(LEASE_MS),
        GOAL_LOOP_POLL_MS: '50',
        GOAL_LOOP_CONCURRENCY: '1',
        GOAL_LOOP_STATUS_INTERVAL_MS: '0',
        GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: '0',
        // What is measured is the lease hand-over, not the write budget (bench/write-budget-burst.ts measures that).
        GOAL_LOOP_GITHUB_WRITES_PER_MINUTE: '100000',
        GOAL_LOOP_GITHUB_WRITES_PER_HOUR: '1000000',
        LOG_LEVEL: 'info',
        ...env,
      });
      workers.push(w);
      return w;
    };

    // The webhook side (`serve` in scale-out), in this process on the same store.
    const probot = new Probot({ appId: 1, privateKey: key, secret: SECRET, log: silent, Octokit: goalLoopOctokit({ retryAfterBaseMs: 5, writeMinTimeMs: 0 }) });
    runtime = createRuntime({ probot, store, role: 'webhooks', logger: silent, workspaceRoot: '/nonexistent', sandboxFor: async () => new ProcessSandbox() });
    await probot.load(runtime.appFn);
    const hooks = runtime;
    const repoSpec = { owner: OWNER, repo: REPO, installationId: INSTALLATION, cloneUrl: repo.bare, sender: 'alice' };
    const label = async (issue: (typeof issues)[number]) => {
      await probot.receive(toEvent('issues', issuesLabeled({ ...repoSpec, issue, label: 'goal' })));
      await hooks.idle();
    };

    // Baseline: a worker's start-up with nothing pending, from spawn to its "running" log line
    // (written after the pool has started, so after its first sweep began).
    const startups: number[] = [];
    for (let i = 0; i < STARTUPS; i++) {
      const t0 = performance.now();
      const w = start({});
      startups.push((await within(w.ready, 30_000, 'an idle worker to start', w)) - t0);
      await stop(w);
    }
    const startup = median(startups);

    const kills: number[] = [];
    for (const issue of issues) {
      const a = start({ GOAL_LOOP_CRASH_AT: 'effects-recorded:finished', LOG_LEVEL: 'warn' });
      await label(issue);
      const death = await within(a.exited, 60_000, `worker A to die at effects-recorded:finished (issue ${issue.number})`, a);
      if (death.signal !== 'SIGKILL') throw new Error(`worker A was to die by SIGKILL; it ended with ${death.code}/${death.signal}:\n${a.output().slice(-3000)}`);
      const tKill = death.at;
      const b = start({});
      const stuck = problems(fake, issue.number);
      if (stuck.length === 0) throw new Error(`issue ${issue.number}: GitHub already showed the goal finished when A died`);
      const deadline = tKill + 30_000;
      for (let last = problems(fake, issue.number); last.length > 0; last = problems(fake, issue.number)) {
        if (performance.now() > deadline) throw new Error(`issue ${issue.number}: GitHub did not converge within 30 s (${last.join('; ')}):\n${b.output().slice(-3000)}`);
        await sleep(POLL_MS);
      }
      kills.push(performance.now() - tKill);
      // Outside the measurement: let B mark the effect done, then stop it, so that the next
      // goal's job goes to the next A.
      const goalKey = { repo: `${OWNER}/${REPO}`, goalId: String(issue.number) };
      const end = performance.now() + 10_000;
      while ((await store.ledger.pendingEffects({ key: goalKey })).length > 0 && performance.now() < end) await sleep(50);
      await stop(b);
    }
    if (fake.violations.length > 0 || fake.unhandled.length > 0) {
      throw new Error(`GitHub API misuse:\n${[...fake.violations, ...fake.unhandled.map((u) => `unhandled ${u}`)].join('\n')}`);
    }

    const med = median(kills);
    const max = Math.max(...kills);
    const expected = Math.max(LEASE_MS, startup) + LEASE_MS / 3;
    const bound = LEASE_MS + LEASE_MS / 3 + startup;
    const s = (n: number) => `${(n / 1000).toFixed(1)} s`;
    process.stdout.write(
      `convergence after a killed worker: median ${s(med)}, max ${s(max)} over ${kills.length} kills (${kills.map((k) => (k / 1000).toFixed(2)).join(', ')} s); ` +
        `lease ${s(LEASE_MS)} (${(med / LEASE_MS).toFixed(2)}x lease); worker start-up ${s(startup)} ` +
        `(median of ${STARTUPS}, spawn to "${READY_LINE}", nothing pending)\n`,
    );
    return [
      {
        name: 'convergence after a killed worker',
        pass: med <= bound,
        detail:
          `median ${s(med)}, max ${s(max)} from A's SIGKILL to a ready PR labelled goal:review alone; ` +
          `target <= lease + lease/3 + start-up = ${s(bound)} (the effect is orphaned <= 1 lease after the kill, ` +
          `B sweeps on start and every lease/3: ~${s(expected)} plus the effect's own GitHub calls)`,
      },
    ];
  } finally {
    await Promise.all(workers.map(stop));
    await runtime?.close().catch(() => undefined);
    await bridge?.close().catch(() => undefined);
    fake?.stop();
    await store?.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** A real `goal-loop worker` process reaching the fake GitHub through the bridge. */
function startWorker(env: Record<string, string>): Worker {
  const child = spawn(process.execPath, [CLI, 'worker'], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let onReady: (at: number) => void = () => undefined;
  const ready = new Promise<number>((resolve) => (onReady = resolve));
  const take = (c: Buffer) => {
    const wasReady = out.includes(READY_LINE);
    out += c.toString();
    if (!wasReady && out.includes(READY_LINE)) onReady(performance.now());
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  const exited = new Promise<Exit>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, at: performance.now() })));
  return { child, exited, ready, output: () => out };
}

/** SIGTERM, then SIGKILL if the worker has not exited within 5 s. */
async function stop(w: Worker): Promise<void> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return;
  w.child.kill('SIGTERM');
  const timer = setTimeout(() => w.child.kill('SIGKILL'), 5000);
  await w.exited;
  clearTimeout(timer);
}

/** Resolves as `p` does, or throws (with the worker's output) after `ms` or when the worker exits first. */
async function within<T>(p: Promise<T>, ms: number, what: string, w: Worker): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}:\n${w.output().slice(-3000)}`)), ms)));
  const early =
    p === (w.exited as Promise<unknown>)
      ? []
      : [
          w.exited.then((e): never => {
            throw new Error(`the worker exited (${e.code}/${e.signal}) while waiting for ${what}:\n${w.output().slice(-3000)}`);
          }),
        ];
  try {
    return await Promise.race([p, timeout, ...early]);
  } finally {
    clearTimeout(timer);
  }
}

/** What GitHub still shows wrong for a finished goal: its PR must be ready, its state label goal:review alone. */
function problems(fake: FakeGitHub, number: number): string[] {
  const out: string[] = [];
  const pulls = fake.pulls.filter((p) => p.head.startsWith(`goal/${number}-`));
  if (pulls.length !== 1) out.push(`${pulls.length} pull requests`);
  else if (pulls[0]!.draft) out.push('the pull request is a draft');
  const labels = fake.labels(number).filter((l) => (STATE_LABELS as readonly string[]).includes(l));
  if (labels.join() !== 'goal:review') out.push(`labels ${labels.join(', ') || 'none'}`);
  return out;
}

function goalBlock(yaml: string): string {
  return `Please do this.\n\n\`\`\`goal\n${yaml.trim()}\n\`\`\`\n`;
}

function privateKey(): string {
  return generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs1', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } }).privateKey;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
