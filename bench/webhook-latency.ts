import { createHmac, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import { createNodeMiddleware, createProbot } from 'probot';
import { startServer } from '../src/github/server/serve.js';
import { openSqliteStore } from '../src/ledger/open-ledger.js';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { ms, percentile, type Verdict } from './stats.js';

const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as Array<{ name: string; examples: Array<{ action?: string }> }>;
const DELIVERIES = 1000;
const ROUNDS = 7;
const CONCURRENCY = 50;
const SECRET = 'bench-secret';

/** Webhook acknowledgement latency of the real server vs a bare Probot app with a no-op handler. */
export async function webhookLatency(): Promise<Verdict[]> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-hooks-'));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs1', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const log = pino({ level: 'silent' });
  // GitHub is unreachable here: every API call the worker makes fails at once, off the ack path.
  const offline = { fetch: async () => new Response('{"message":"offline"}', { status: 503, headers: { 'content-type': 'application/json' } }) };
  const store = openSqliteStore(join(root, 'ledger.db'), { checkpoints: 'background' }); // as `goal-loop serve` opens it
  const ours = await startServer({
    store,
    workspaceRoot: join(root, 'ws'),
    sandboxFor: async () => new ProcessSandbox(),
    env: {},
    port: 0,
    host: '127.0.0.1',
    probotOverrides: { overrides: { appId: 1, privateKey, secret: SECRET, log, request: offline } },
  });
  const bare = await bareApp(privateKey, log);
  try {
    const payload = commentPayload();
    await send(ours.port, payload, 100); // warm-up, both
    await send(bareAddress(bare), payload, 100);
    // Rounds alternate between the two servers, so that a machine growing busier or quieter
    // weighs on both. The p99 is over every delivery of a server (its 70th-slowest of 7,000): the
    // median of each round's own p99 (its 10th-slowest) moved by 10% from run to run, this by 1-2%.
    const bareRounds: number[][] = [];
    const ourRounds: number[][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bareRounds.push(await send(bareAddress(bare), payload, DELIVERIES));
      ourRounds.push(await send(ours.port, payload, DELIVERIES));
    }
    const bareTimes = bareRounds.flat();
    const ourTimes = ourRounds.flat();
    const p99 = percentile(ourTimes, 99);
    const bareP99 = percentile(bareTimes, 99);
    const ratio = p99 / bareP99;
    const perRound = (rounds: number[][]) => rounds.map((t) => percentile(t, 99).toFixed(0)).join(' ');
    process.stdout.write(
      `webhook acknowledgement: ${ROUNDS} rounds of ${DELIVERIES} signed deliveries, ${CONCURRENCY} at a time\n` +
        `  bare Probot, no-op handler   p50 ${ms(percentile(bareTimes, 50))}  p95 ${ms(percentile(bareTimes, 95))}  p99 ${ms(bareP99)}  (p99 per round ${perRound(bareRounds)})\n` +
        `  goal-loop                    p50 ${ms(percentile(ourTimes, 50))}  p95 ${ms(percentile(ourTimes, 95))}  p99 ${ms(p99)}  (p99 per round ${perRound(ourRounds)})\n` +
        `  ratio (p99)                  ${ratio.toFixed(2)}x\n`,
    );
    return [
      { name: 'webhook p99', pass: p99 < 50, detail: `${ms(p99)} (target < 50 ms)` },
      // Issue 27: no slower than Probot alone, though ours verifies, caps and records each delivery first.
      { name: 'webhook vs bare app', pass: ratio <= 1.0, detail: `${ratio.toFixed(2)}x the bare app's p99 (target <= 1.0x)` },
    ];
  } finally {
    await ours.close();
    await new Promise((r) => bare.close(r));
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
}

function commentPayload(): Record<string, unknown> {
  const example = examples.find((e) => e.name === 'issue_comment')!.examples.find((x) => x.action === 'created')!;
  const p = structuredClone(example) as Record<string, unknown> & { comment: { body: string }; sender: { type: string } };
  p.installation = { id: 1, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' };
  p.comment.body = '/goal status';
  p.sender.type = 'User';
  return p;
}

async function bareApp(privateKey: string, log: pino.Logger): Promise<Server> {
  const probot = createProbot({ overrides: { appId: 1, privateKey, secret: SECRET, log } });
  const middleware = await createNodeMiddleware((app) => app.on('issue_comment.created', async () => undefined), { probot });
  const server = createServer((req, res) => void middleware(req, res, () => res.writeHead(404).end()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return server;
}

function bareAddress(server: Server): number {
  const a = server.address();
  return typeof a === 'object' && a ? a.port : 0;
}

/**
 * The load runs in a worker thread, so the client never competes with the server's event loop, on
 * node:http with kept-alive sockets: fetch (undici) cost more per request than either server, so
 * both measured the client (p50 54-61 ms for each, whatever the server did).
 */
function send(port: number, payload: Record<string, unknown>, count: number): Promise<number[]> {
  const body = JSON.stringify(payload);
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  const worker = new Worker(LOAD_SCRIPT, { eval: true, workerData: { port, body, signature, count, concurrency: CONCURRENCY } });
  return new Promise((resolve, reject) => {
    worker.once('message', (m: { times?: number[]; error?: string }) => (m.error ? reject(new Error(m.error)) : resolve(m.times!)));
    worker.once('error', reject);
  });
}

const LOAD_SCRIPT = `
const { workerData, parentPort } = require('node:worker_threads');
const { randomUUID } = require('node:crypto');
const http = require('node:http');
const { port, body, signature, count, concurrency } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const times = [];
let next = 0;
function post() {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/api/github/webhooks', method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-github-event': 'issue_comment', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': signature } },
      (res) => { res.resume(); res.on('end', () => res.statusCode === 200 ? resolve() : reject(new Error('webhook answered ' + res.statusCode))); });
    req.on('error', reject);
    req.end(body);
  });
}
async function one() {
  while (next < count) {
    next += 1;
    const t0 = performance.now();
    await post();
    times.push(performance.now() - t0);
  }
}
Promise.all(Array.from({ length: concurrency }, one)).then(
  () => { agent.destroy(); parentPort.postMessage({ times }); },
  (err) => parentPort.postMessage({ error: String(err) }),
);
`;
