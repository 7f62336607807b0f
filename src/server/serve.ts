import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { createNodeMiddleware, createProbot, type Probot } from 'probot';
import type { RepoConfig } from '../config/repo-config.js';
import { claudeHooks } from '../github/claude-hooks.js';
import { createRuntime, type GoalLoopRuntime } from '../github/runtime.js';
import type { Store } from '../ledger/open-ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import { pick, serviceSettings } from './settings.js';

export const DEFAULT_WEBHOOK_PATH = '/api/github/webhooks';

export interface ServeOptions {
  store: Pick<Store, 'ledger' | 'queue'>;
  /** `both` (embedded: webhooks and workers in this process) or `webhooks` only (scale-out). */
  role?: 'both' | 'webhooks';
  leaseMs?: number;
  pollMs?: number;
  workspaceRoot: string;
  sandboxFor: (config: RepoConfig) => Promise<Sandbox>;
  env?: NodeJS.ProcessEnv;
  /** Overrides for tests (appId, privateKey, secret, log, Octokit, request). */
  probotOverrides?: Parameters<typeof createProbot>[0];
  port?: number;
  host?: string;
  concurrency?: number;
  minUpdateIntervalMs?: number;
  controlPollMs?: number;
}

export interface RunningServer {
  server: Server;
  port: number;
  probot: Probot;
  runtime: GoalLoopRuntime;
  log: Logger;
  close(): Promise<void>;
}

/**
 * The GitHub App's HTTP server: Probot's webhook middleware at WEBHOOK_PATH (signatures
 * verified with WEBHOOK_SECRET), `GET /health`, and (embedded) the in-process goal workers.
 */
export async function startServer(opts: ServeOptions): Promise<RunningServer> {
  const env = opts.env ?? process.env;
  const settings = serviceSettings(env);
  const probot = createProbot({ env, ...opts.probotOverrides, overrides: { Octokit: settings.Octokit, ...opts.probotOverrides?.overrides } });
  await probot.ready(); // Probot 14 builds its logger and auth asynchronously
  const log = probot.log.child({ name: 'goal-loop' });
  const runtime = createRuntime({
    probot,
    store: opts.store,
    role: opts.role ?? 'both',
    logger: log,
    workspaceRoot: opts.workspaceRoot,
    sandboxFor: opts.sandboxFor,
    concurrency: opts.concurrency ?? settings.concurrency,
    ...pick(opts.leaseMs ?? settings.leaseMs, (leaseMs) => ({ leaseMs })),
    ...pick(opts.pollMs ?? settings.pollMs, (pollMs) => ({ pollMs })),
    ...pick(opts.minUpdateIntervalMs ?? settings.minUpdateIntervalMs, (minUpdateIntervalMs) => ({ minUpdateIntervalMs })),
    ...(opts.controlPollMs !== undefined ? { controlPollMs: opts.controlPollMs } : {}),
    claude: claudeHooks(env, log),
  });
  const webhooksPath = env.WEBHOOK_PATH || DEFAULT_WEBHOOK_PATH;
  const middleware = await createNodeMiddleware(runtime.appFn, { probot, webhooksPath });
  let ready = false;
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: ready ? 'ok' : 'starting' }));
      return;
    }
    void Promise.resolve(
      middleware(req, res, () => {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found\n');
      }),
    ).catch((err: unknown) => {
      log.error({ err }, 'request failed');
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const port = opts.port ?? (Number.parseInt(env.PORT ?? '', 10) || 3000);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, opts.host ?? env.HOST, () => resolve());
  });
  const address = server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  const resumed = await runtime.resumeInterrupted();
  ready = true;
  log.info({ port: actualPort, webhooksPath, resumed, role: opts.role ?? 'both' }, 'goal-loop is listening');
  return {
    server,
    port: actualPort,
    probot,
    runtime,
    log,
    async close() {
      ready = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await runtime.close();
    },
  };
}

