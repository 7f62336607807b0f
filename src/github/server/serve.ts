import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { createNodeMiddleware, type Probot } from 'probot';
import { type AppServiceOptions, createAppRuntime, type GoalLoopRuntime } from '../runtime.js';
import { BODY_BUDGET, type ByteBudget, MAX_WEBHOOK_BODY_BYTES, readCappedBody, refuseUnread } from './body-cap.js';
import { acceptGoalDelivery } from './goal-deliveries.js';
import { refusedDelivery, signatureMatches, signatureOf } from './signature.js';
import { startWebhookRelay } from './webhook-relay.js';

export const DEFAULT_WEBHOOK_PATH = '/api/github/webhooks';

/** Probot's fallback when no secret is configured: public, so it authenticates nothing. */
const PROBOT_DEFAULT_SECRET = 'development';

/** Why `secret` cannot authenticate webhooks (one line, for the operator), or undefined if it can. */
export function webhookSecretProblem(secret: string | undefined): string | undefined {
  const fix = "set it to a long random string (e.g. `openssl rand -hex 32`) and enter the same one as the GitHub App's webhook secret";
  if (!secret?.trim()) return `WEBHOOK_SECRET is not set, so anyone could forge webhooks: ${fix}`;
  if (secret === PROBOT_DEFAULT_SECRET) return `WEBHOOK_SECRET is Probot's public default "${PROBOT_DEFAULT_SECRET}", so anyone could forge webhooks: ${fix}`;
  return undefined;
}

export interface ServeOptions extends AppServiceOptions {
  /** `both` (embedded: webhooks and workers in this process) or `webhooks` only (scale-out). */
  role?: 'both' | 'webhooks';
  port?: number;
  host?: string;
  /** Whether the jail works here (`bwrap usable` / `bwrap unusable: why`), for the start line. */
  jail?: string;
  /** Body bytes all requests may hold at once (default: the process's one budget, BODY_BUDGET). */
  bodyBudget?: ByteBudget;
  /** Milliseconds a webhook body may go without a byte before it is dropped (default BODY_IDLE_MS). */
  bodyIdleMs?: number;
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
 * The GitHub App's HTTP server: webhooks at WEBHOOK_PATH (signatures verified with WEBHOOK_SECRET
 * first, bodies capped at 25 MB each and BODY_BUDGET in all, as they arrive; the goal events then
 * go to the inbox directly, the rest to Probot's middleware), `GET /health`, and (embedded) the
 * in-process goal workers. Refuses to start without a usable WEBHOOK_SECRET.
 */
export async function startServer(opts: ServeOptions): Promise<RunningServer> {
  const env = opts.env ?? process.env;
  // The same precedence as createProbot; passed on explicitly so Probot's fallback never applies.
  const secret = opts.probotOverrides?.overrides?.secret ?? env.WEBHOOK_SECRET;
  const problem = webhookSecretProblem(secret);
  if (problem) throw new Error(problem);
  const key = secret!; // webhookSecretProblem refused an unset one
  const probotOverrides = { ...opts.probotOverrides, overrides: { ...opts.probotOverrides?.overrides, secret } };
  const limits = { maxBytes: MAX_WEBHOOK_BODY_BYTES, budget: opts.bodyBudget ?? BODY_BUDGET, ...(opts.bodyIdleMs ? { idleMs: opts.bodyIdleMs } : {}) };
  const { probot, runtime, log } = await createAppRuntime({ ...opts, probotOverrides }, opts.role ?? 'both', 'goal-loop');
  const webhooksPath = env.WEBHOOK_PATH || DEFAULT_WEBHOOK_PATH;
  const middleware = await createNodeMiddleware(runtime.appFn, { probot, webhooksPath });
  const accept = (event: Parameters<typeof runtime.intake.accept>[0]) => runtime.intake.accept(event);
  let ready = false;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: ready ? 'ok' : 'starting' }));
      return;
    }
    // Probot's manifest flow registers `<the URL its setup page was opened on>/` as the webhook URL
    // (when no WEBHOOK_PROXY_URL is set): a POST to the root is a delivery too.
    if (req.method === 'POST' && isWebhookPath(req.url ?? '', '/')) req.url = webhooksPath;
    if (req.method === 'POST' && isWebhookPath(req.url ?? '', webhooksPath)) {
      // A stranger's delivery costs a header check: no signature, no body read, nothing of it logged.
      const signature = signatureOf(req.headers);
      if (!signature) {
        refuseUnread(req, 401, 'Unauthorized: X-Hub-Signature-256 is missing or malformed');
        log.warn(refusedDelivery(req.headers), 'webhook refused: no X-Hub-Signature-256');
        return;
      }
      const body = await readCappedBody(req, res, limits);
      if (!body) return;
      // Checked here, not only by @octokit/webhooks: a refusal there logs the whole payload.
      if (!signatureMatches(key, body, signature)) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'Unauthorized: the signature does not match WEBHOOK_SECRET' }));
        log.warn(refusedDelivery(req.headers, body.length), "webhook refused: its signature does not match WEBHOOK_SECRET (check the GitHub App's webhook secret)");
        return;
      }
      // The goal events go straight to the inbox; the rest (installation, ping, a 4xx) to Probot.
      if (await acceptGoalDelivery(req, res, body, accept, log)) return;
      // @octokit/webhooks takes a pre-read body from `rawBody` and decodes it as it would the stream.
      Object.assign(req, { body: {}, rawBody: body });
    }
    await middleware(req, res, () => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
    });
  };
  // A body trickled in to hold the budget is dropped after 30 s (GitHub itself gives up after 10),
  // one that stalls after BODY_IDLE_MS; Node checks the deadlines every 5 s, not its default 30.
  const server = createServer({ requestTimeout: 30_000, headersTimeout: 20_000, connectionsCheckingInterval: 5_000 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
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
  const listenHost = typeof address === 'object' && address ? (address.family === 'IPv6' ? `[${address.address}]` : address.address) : (opts.host ?? env.HOST ?? '');
  const proxyUrl = env.WEBHOOK_PROXY_URL;
  const relayHost = !listenHost || listenHost === '0.0.0.0' || listenHost === '[::]' ? '127.0.0.1' : listenHost;
  const relay = proxyUrl ? await startWebhookRelay(proxyUrl, `http://${relayHost}:${actualPort}${webhooksPath}`, log) : undefined;
  const resumed = await runtime.resumeInterrupted();
  ready = true;
  // The one line a successful start prints at the default level: where, as which app, on what, jailed or not.
  const appId = String(opts.probotOverrides?.overrides?.appId ?? env.APP_ID ?? '');
  const store = describeStore(opts.store as { kind?: 'sqlite' | 'postgres'; location?: string });
  const role = opts.role ?? 'both';
  log.info(
    { host: listenHost, port: actualPort, webhooksPath, appId, store, jail: opts.jail, resumed, role },
    `goal-loop is listening on ${listenHost}:${actualPort}${webhooksPath}${relay ? ` (relayed from ${proxyUrl})` : ''} (app ${appId}, store ${store}${opts.jail ? `, jail ${opts.jail}` : ''}, ${role === 'both' ? 'webhooks and workers' : 'webhooks only'})`,
  );
  return {
    server,
    port: actualPort,
    probot,
    runtime,
    log,
    async close() {
      ready = false;
      await relay?.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await runtime.close();
    },
  };
}

/** The store for a log line: the SQLite file, or the PostgreSQL host and database (never credentials). */
export function describeStore(store: { kind?: 'sqlite' | 'postgres'; location?: string }): string {
  if (store.kind === 'sqlite') return `SQLite ${store.location}`;
  if (store.kind !== 'postgres' || !store.location) return store.kind ?? 'in-memory';
  try {
    const url = new URL(store.location);
    return `PostgreSQL ${url.host}${url.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}

/** The path test of @octokit/webhooks' middleware, so that no request it reads escapes the cap. */
export function isWebhookPath(url: string, webhooksPath: string): boolean {
  try {
    return new URL(trimTrailingSlashes(url), 'http://localhost').pathname === trimTrailingSlashes(webhooksPath);
  } catch {
    return false; // the middleware answers 422 without reading
  }
}

/** `path` without its trailing slashes ('/' if nothing is left), in one pass: `/\/+$/` restarts at every slash. */
function trimTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 0x2f) end--;
  return end === 0 ? '/' : path.slice(0, end);
}
