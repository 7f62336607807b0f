import type { ChildProcess } from 'node:child_process';
import { DEFAULT_WEBHOOK_PATH } from '../../src/github/server/serve.js';
import { type CliResult, startCli } from './cli.js';
import { freePort } from './free-port.js';
import { privateKey, SECRET } from './github-app-harness.js';
import type { GitHubBridge } from './github-bridge.js';
import { deliverWebhook } from './webhook-payloads.js';

export interface ServeProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
  port: number;
  /** `http://127.0.0.1:PORT` */
  base: string;
  /** The webhook URL (DEFAULT_WEBHOOK_PATH). */
  webhookUrl: string;
  /** The secret deliveries are signed with (WEBHOOK_SECRET of the process). */
  secret: string;
  /** Whether the process is still running. */
  alive(): boolean;
  /** Resolves when GET /health answers 200; rejects if the process exits first or after `ms`. */
  ready(ms?: number): Promise<void>;
  /** A signed delivery over HTTP, as GitHub would send it. */
  deliver(event: string, payload: object, deliveryId?: string): Promise<Response>;
  kill(signal?: NodeJS.Signals): Promise<CliResult>;
}

/**
 * A real `goal-loop serve` process acting as the app, reaching the fake GitHub through the bridge,
 * listening on a free loopback port (PORT, HOST). With a PostgreSQL `DATABASE_URL` in `store` it runs
 * webhooks only (scale-out); with `GOAL_LOOP_DB` it runs webhooks and workers (embedded).
 * The caller ends it (kill); call `ready()` before delivering.
 */
export async function startServeProcess(o: { bridge: GitHubBridge; store: Record<string, string>; workspaces: string; env?: Record<string, string> }): Promise<ServeProcess> {
  // A port that was free a moment ago: a collision makes the process exit, which ready() reports.
  const port = await freePort();
  const secret = SECRET;
  const { child, done } = startCli(['serve'], {
    APP_ID: '1',
    PRIVATE_KEY: privateKey(),
    WEBHOOK_SECRET: secret,
    PORT: String(port),
    HOST: '127.0.0.1',
    ...o.bridge.env,
    ...o.store,
    GOAL_LOOP_WORKSPACES: o.workspaces,
    GOAL_LOOP_LEASE_MS: '1000',
    GOAL_LOOP_POLL_MS: '50',
    GOAL_LOOP_STATUS_INTERVAL_MS: '0',
    GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: '0',
    // The shared write budget runs, with room for the tests' bursts (test/ledger/*write-budget* test its limits).
    GOAL_LOOP_GITHUB_WRITES_PER_MINUTE: '100000',
    GOAL_LOOP_GITHUB_WRITES_PER_HOUR: '1000000',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    ...o.env,
  });
  let exited = false;
  void done.then(() => (exited = true));
  const base = `http://127.0.0.1:${port}`;
  const webhookUrl = `${base}${DEFAULT_WEBHOOK_PATH}`;
  return {
    child,
    done,
    port,
    base,
    webhookUrl,
    secret,
    alive: () => !exited && child.exitCode === null && child.signalCode === null,
    async ready(ms = 30_000) {
      const end = Date.now() + ms;
      while (true) {
        if (exited) {
          const r = await done;
          throw new Error(`goal-loop serve exited before it was ready (code ${r.code}, signal ${r.signal}):\n${r.stderr.slice(-4000)}`);
        }
        try {
          const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) });
          if (res.status === 200) return;
        } catch {
          // not listening yet
        }
        if (Date.now() > end) throw new Error(`goal-loop serve was not ready (GET /health 200) within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    deliver: (event, payload, deliveryId) => deliverWebhook(webhookUrl, { event, payload, secret, deliveryId }),
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return done;
    },
  };
}
