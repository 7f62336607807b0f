import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { createRuntime, type GoalLoopRuntime } from '../../src/github/runtime.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import { openSqliteStore } from '../../src/ledger/open-ledger.js';
import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import type { GoalKey, GoalRecord } from '../../src/ports/ledger.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { type CliResult, startCli } from './cli.js';
import { fakeGitHub } from './fake-github.js';
import { INSTALLATION, OWNER, privateKey, REPO, silent, testProbot } from './github-app-harness.js';
import { type GitHubBridge, githubBridge } from './github-bridge.js';
import { freshDatabase } from './postgres.js';
import { tempDir } from './temp.js';
import { TEST_STORE } from './test-store.js';
import { issueCommentCreated, issuesLabeled, toEvent, type WebhookEventName } from './webhook-payloads.js';

export interface WorkerProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
  kill(signal?: NodeJS.Signals): Promise<CliResult>;
}

/** A real `goal-loop worker` process acting as the app, reaching the fake GitHub through the bridge. */
export function startWorkerProcess(o: { bridge: GitHubBridge; store: Record<string, string>; workspaces: string; env?: Record<string, string> }): WorkerProcess {
  const { child, done } = startCli(['worker'], {
    APP_ID: '1',
    PRIVATE_KEY: privateKey(),
    ...o.bridge.env,
    ...o.store,
    GOAL_LOOP_WORKSPACES: o.workspaces,
    GOAL_LOOP_LEASE_MS: '1000',
    GOAL_LOOP_POLL_MS: '50',
    GOAL_LOOP_CONCURRENCY: '1',
    GOAL_LOOP_STATUS_INTERVAL_MS: '0',
    GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: '0',
    // The shared write budget runs, with room for the tests' bursts (test/ledger/*write-budget* test its limits).
    GOAL_LOOP_GITHUB_WRITES_PER_MINUTE: '100000',
    GOAL_LOOP_GITHUB_WRITES_PER_HOUR: '1000000',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    ...o.env,
  });
  return {
    child,
    done,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return done;
    },
  };
}

/** The webhook side (`serve` in scale-out): an in-process intake on the shared store. */
export async function webhookSide(store: Store): Promise<{ runtime: GoalLoopRuntime; deliver(name: WebhookEventName, payload: object, id?: string): Promise<void> }> {
  const probot = testProbot();
  const runtime = createRuntime({ probot, store, role: 'webhooks', logger: silent, workspaceRoot: '/nonexistent', sandboxFor: async () => new ProcessSandbox() });
  await probot.load(runtime.appFn);
  return {
    runtime,
    async deliver(name, payload, id) {
      await probot.receive(toEvent(name, payload, id));
      await runtime.idle();
    },
  };
}

/** Polls the ledger until the goal reaches a state in `states` (or throws after `ms`). */
export async function waitForGoal(store: Store, key: GoalKey, states: string[], ms = 60_000): Promise<GoalRecord> {
  const end = Date.now() + ms;
  while (true) {
    const goal = await store.ledger.getGoal(key);
    if (goal && states.includes(goal.state)) return goal;
    if (Date.now() > end) throw new Error(`goal ${key.goalId} did not reach ${states.join('/')} (now ${goal?.state ?? 'absent'})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls until `check` is true (or throws after `ms`). */
export async function waitUntil(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface IssueSeed {
  number: number;
  title: string;
  body: string;
  user: string;
  labels: string[];
}

/**
 * One repository, the fake GitHub (reached by worker processes through the bridge), a store
 * (SQLite, or with `store: 'postgres'` a fresh database; default: the vitest project's) shared by
 * the in-process webhook side and the worker processes, and helpers to start workers and deliver
 * the issue's events. Everything stops when the test ends.
 */
export async function workerScene(issue: IssueSeed, opts: { store?: 'sqlite' | 'postgres'; config?: string } = {}) {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const fake = fakeGitHub({ owner: OWNER, repo: REPO, installationId: INSTALLATION, collaborators: { alice: 'write' }, issues: [issue], strictAuth: true });
  fake.setFile('.github/goal-loop.yml', opts.config ?? 'sandbox: process\n');
  const bridge = await githubBridge();
  const dbPath = join(root, 'ledger.db');
  const databaseUrl = (opts.store ?? TEST_STORE) === 'postgres' ? await freshDatabase() : undefined;
  const store: Store = databaseUrl ? await openPostgresStore(databaseUrl) : openSqliteStore(dbPath);
  const storeEnv: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : { GOAL_LOOP_DB: dbPath };
  const workers: WorkerProcess[] = [];
  onTestFinished(async () => {
    const ends = await Promise.all(workers.map((w) => w.kill()));
    if (process.env.DEBUG_WORKERS) for (const e of ends) console.log(e.stdout, e.stderr);
    await bridge.close();
    await store.close();
    fake.stop();
  });
  const webhooks = await webhookSide(store);
  const workspaces = join(root, 'workspaces');
  const repoSpec = { owner: OWNER, repo: REPO, installationId: INSTALLATION, cloneUrl: repo.bare, sender: 'alice' };
  return {
    root,
    repo,
    fake,
    bridge,
    store,
    workspaces,
    worker(env: Record<string, string> = {}) {
      const w = startWorkerProcess({ bridge, store: storeEnv, workspaces, env });
      workers.push(w);
      return w;
    },
    label: () => webhooks.deliver('issues', issuesLabeled({ ...repoSpec, issue, label: 'goal' })),
    /** A human's comment on the issue, delivered as GitHub would. */
    comment: async (body: string) => {
      const c = fake.addComment(issue.number, body, 'alice');
      await webhooks.deliver('issue_comment', issueCommentCreated({ ...repoSpec, issue, comment: { id: c.id, body, user: 'alice' } }));
    },
  };
}
