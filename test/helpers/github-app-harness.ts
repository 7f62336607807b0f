import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pino } from 'pino';
import { Probot, type ProbotOctokit } from 'probot';
import { onTestFinished } from 'vitest';
import { createSampleRepo, type SampleRepo } from '../../src/demo/sample-repo.js';
import { claudeHooks } from '../../src/github/claude-hooks.js';
import { goalLoopOctokit } from '../../src/github/octokit.js';
import { createRuntime, type GoalLoopRuntime, type RuntimeOptions, type RuntimeRole } from '../../src/github/runtime.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import type { Ledger } from '../../src/ports/ledger.js';
import type { Sandbox } from '../../src/ports/sandbox.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { type FakeGitHub, type FakeGitHubOptions, fakeGitHub } from './fake-github.js';
import { git } from './git.js';
import { tempDir } from './temp.js';
import { openTestStore } from './test-store.js';
import { type RepoSpec, toEvent, type WebhookEventName } from './webhook-payloads.js';

export const OWNER = 'octo-org';
export const REPO = 'widgets';
export const INSTALLATION = 4242;
export const SECRET = 'test-webhook-secret';

let keyPem: string | undefined;
export function privateKey(): string {
  keyPem ??= generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs1', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } }).privateKey;
  return keyPem;
}

export const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** Probot's Octokit as the app uses it, with waits shrunk for tests. */
export const TestOctokit = goalLoopOctokit({ retryAfterBaseMs: 5, writeMinTimeMs: 0 });

export function testProbot(Octokit: typeof ProbotOctokit = TestOctokit): Probot {
  return new Probot({ appId: 1, privateKey: privateKey(), secret: SECRET, log: silent, Octokit });
}

export interface AppHarness {
  root: string;
  repo: SampleRepo;
  fake: FakeGitHub;
  ledger: Ledger;
  store: Store;
  probot: Probot;
  runtime: GoalLoopRuntime;
  repoSpec: RepoSpec;
  /** Delivers an event through `probot.receive`, then waits until the app is idle. */
  deliver(name: WebhookEventName, payload: object, deliveryId?: string): Promise<void>;
  /**
   * A restarted process: the current runtime freezes as a killed process would (its store calls
   * never return, so its leases stop beating and expire), and a fresh probot + runtime starts on
   * the same store, workspaces and fake GitHub.
   */
  restart(sandbox?: Sandbox, role?: RuntimeRole): Promise<GoalLoopRuntime>;
}

export async function appHarness(
  opts: Partial<Omit<FakeGitHubOptions, 'owner' | 'repo' | 'installationId'>> & {
    sandbox?: Sandbox;
    repoFiles?: Record<string, string>;
    claudeEnv?: NodeJS.ProcessEnv;
    minUpdateIntervalMs?: number;
    /** `webhooks`: no workers (goals stay queued); default both. */
    role?: RuntimeRole;
    /** The runtime's queue report; default off (tests call a QueueReporter themselves). */
    queueReport?: RuntimeOptions['queueReport'];
    /** The Octokit class the App's clients are made of (default TestOctokit). */
    Octokit?: typeof ProbotOctokit;
  } = {},
): Promise<AppHarness> {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'), opts.repoFiles);
  const fake = fakeGitHub({
    owner: OWNER,
    repo: REPO,
    installationId: INSTALLATION,
    collaborators: { alice: 'write', maya: 'maintain', rob: 'read', tri: 'triage' },
    strictAuth: true,
    // A PR's head (and a branch's sha) as the repository has it now: the app pushes to the bare repo.
    resolveSha: (ref: string) => {
      try {
        return git(repo.bare, 'rev-parse', '--verify', '--quiet', `refs/heads/${ref}`) || undefined;
      } catch {
        return undefined;
      }
    },
    ...opts,
  });
  const store = await openTestStore(root);
  const ledger = store.ledger;
  let alive = { value: true };
  const make = (sandbox: Sandbox, role: RuntimeRole) => {
    const probot = testProbot(opts.Octokit);
    alive = { value: true };
    const life = alive;
    const runtime = createRuntime({
      probot,
      store: { ledger: freezable(ledger, life), queue: freezable(store.queue, life) },
      leaseMs: 400,
      pollMs: 25,
      logger: silent,
      workspaceRoot: join(root, 'workspaces'),
      sandboxFor: async () => sandbox,
      minUpdateIntervalMs: opts.minUpdateIntervalMs ?? 0,
      controlPollMs: 50,
      role,
      queueReport: opts.queueReport ?? { intervalMs: 0, refreshesPerMinute: 0 },
      ...(opts.claudeEnv ? { claude: claudeHooks(opts.claudeEnv, silent) } : {}),
    });
    return { probot, runtime };
  };
  const first = make(opts.sandbox ?? new ProcessSandbox(), opts.role ?? 'both');
  // One teardown, in this order: a goal still running stops (or its requests would land on the
  // next test's fake), nothing of the finished test may still write to the store, then the checks.
  onTestFinished(async () => {
    await Promise.race([h.runtime.close(0), new Promise((r) => setTimeout(r, 2000).unref())]);
    alive.value = false;
    fake.stop();
    await store.close();
    // Every request the app made must exist in GitHub's OpenAPI description, with its required fields.
    if (fake.violations.length > 0 || fake.unhandled.length > 0) {
      throw new Error(`GitHub API misuse:\n${[...fake.violations, ...fake.unhandled.map((u) => `unhandled ${u}`)].join('\n')}`);
    }
  });
  await first.probot.load(first.runtime.appFn);
  const h: AppHarness = {
    root,
    repo,
    fake,
    ledger,
    store,
    probot: first.probot,
    runtime: first.runtime,
    repoSpec: { owner: OWNER, repo: REPO, installationId: INSTALLATION, cloneUrl: repo.bare, sender: 'alice' },
    async deliver(name, payload, deliveryId = randomUUID()) {
      await h.probot.receive(toEvent(name, payload, deliveryId));
      await h.runtime.idle();
    },
    async restart(sandbox = new ProcessSandbox(), role = opts.role ?? 'both') {
      alive.value = false;
      const next = make(sandbox, role);
      await next.probot.load(next.runtime.appFn);
      h.probot = next.probot;
      h.runtime = next.runtime;
      return next.runtime;
    },
  };
  return h;
}

/** A ```goal block for an issue body. */
export function goalBlock(yaml: string): string {
  return `Please do this.\n\n\`\`\`goal\n${yaml.trim()}\n\`\`\`\n`;
}

/** A port whose calls hang forever once `life.value` is false: a process frozen or killed. */
function freezable<T extends object>(target: T, life: { value: boolean }): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v = Reflect.get(t, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => (life.value ? (v as (...a: unknown[]) => unknown).apply(t, args) : new Promise(() => undefined));
    },
  });
}

/** A goal of two steps in a chain, each a file its verification looks for. */
export const TWO_FILE_GOAL = goalBlock(`
objective: Two files
tasks:
  - { id: one, title: One, run: "echo 1 > one.txt", verification: "test -f one.txt" }
  - { id: two, title: Two, run: "echo 2 > two.txt", verification: "test -f two.txt", dependencies: [one] }
`);

/** A goal of three steps in a chain, each a file its verification looks for. */
export const THREE_STEP_GOAL = goalBlock(`
objective: Three steps
tasks:
  - { id: s1, title: Step one, run: "echo 1 > s1", verification: "test -f s1" }
  - { id: s2, title: Step two, run: "echo 2 > s2", verification: "test -f s2", dependencies: [s1] }
  - { id: s3, title: Step three, run: "echo 3 > s3", verification: "test -f s3", dependencies: [s2] }
`);
