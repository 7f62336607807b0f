import { writeFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/cli/logging.js';
import { ByteBudget } from '../../src/github/server/body-cap.js';
import type { RunningServer } from '../../src/github/server/serve.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import { startBareServer } from '../helpers/bare-server.js';
import { startCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';
import { privateKey, SECRET, silent } from '../helpers/github-app-harness.js';
import { holdBody, statusOf, streamBody } from '../helpers/raw-http.js';
import { tempDir } from '../helpers/temp.js';
import { deliverWebhook, webhookHeaders } from '../helpers/webhook-payloads.js';

const MB = 1024 * 1024;
const HOOK = '/api/github/webhooks';
// What the server may read past the point where it refuses: socket reads in flight, headers.
const SLACK = 2 * MB;

let store: Store | undefined;
let server: RunningServer | undefined;
let sockets: Socket[] = [];

async function serve(o: { log?: ReturnType<typeof createLogger>; bodyBudget?: ByteBudget } = {}): Promise<RunningServer> {
  // Slow clients here hold their bodies for the whole test: no idle timeout within it.
  ({ server, store } = await startBareServer(o.bodyBudget ? { bodyBudget: o.bodyBudget, bodyIdleMs: 60_000 } : {}, o.log ?? silent));
  sockets = [];
  server.server.on('connection', (s: Socket) => sockets.push(s));
  return server;
}

const readByServer = () => sockets.reduce((n, s) => n + s.bytesRead, 0);

afterEach(async () => {
  await server?.close();
  await store?.close();
  server = undefined;
  store = undefined;
});

/** The process's own logger (the real redaction hook), writing to memory. */
function capturedLog(): { log: ReturnType<typeof createLogger>; text: () => string } {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString();
      done();
    },
  });
  return { log: createLogger('info', sink), text: () => out };
}

describe('a delivery without the secret costs a header check', () => {
  it('attack: no X-Hub-Signature-256 and a declared 24 MB body: 401 at once, the connection closed unread', async () => {
    const s = await serve();
    const { 'x-hub-signature-256': _, ...unsigned } = webhookHeaders({ event: 'ping', secret: SECRET, body: '' });
    const x = await streamBody({ port: s.port, path: HOOK, headers: unsigned, contentLength: 24 * MB, budget: 24 * MB, patienceMs: 10_000 });
    expect(statusOf(x), x.response.slice(0, 200)).toBe(401);
    expect(x.closedByServer).toBe(true);
    expect(readByServer()).toBeLessThan(SLACK);
    expect((await fetch(`http://127.0.0.1:${s.port}/health`)).status).toBe(200);
  });

  it('attack: a wrong signature on 8 MB of letters: 401, and nothing of the body reaches the log', async () => {
    const { log, text } = capturedLog();
    const s = await serve({ log });
    const body = `{"zen":"${'a'.repeat(8 * MB)}","hook_id":1}`;
    const forged = await fetch(`http://127.0.0.1:${s.port}${HOOK}`, {
      method: 'POST',
      headers: webhookHeaders({ event: 'ping', deliveryId: 'forged-1', secret: 'not-the-secret', body }),
      body,
      signal: AbortSignal.timeout(30_000),
    });
    expect(forged.status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${s.port}/health`)).status).toBe(200);
    await new Promise((r) => setImmediate(r));
    const lines = text().split('\n').filter(Boolean);
    const refusal = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.delivery === 'forged-1');
    expect(refusal, text().slice(0, 2000)).toMatchObject({ level: 40, event: 'ping', bytes: body.length });
    expect(text()).not.toContain('a'.repeat(100));
    // A signed one is still taken.
    const ok = await deliverWebhook(`http://127.0.0.1:${s.port}${HOOK}`, { event: 'ping', payload: { zen: 'signed', hook_id: 2 }, secret: SECRET });
    expect(ok.status).toBe(200);
  });
});

describe('one bound on the body bytes all requests hold at once', () => {
  it('attack: bodies beyond the bound get 503 at once, unread; the bound is given back when a request ends', async () => {
    const budget = new ByteBudget(3 * MB, 3 * MB);
    const s = await serve({ bodyBudget: budget });
    const headers = webhookHeaders({ event: 'ping', secret: SECRET, body: 'a body still to come' });
    // Three slow clients each declare 1 MB and send all of it but a byte: together they hold the
    // whole bound (what they only declare holds nothing: see webhook-slow-bodies.test.ts).
    const held = [0, 1, 2].map(() => holdBody({ port: s.port, path: HOOK, headers, contentLength: MB, sendBytes: MB - 1 }));
    for (let i = 0; budget.inUse < 3 * MB - 3; i++) {
      if (i > 200) throw new Error(`the slow bodies hold ${budget.inUse} bytes`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const before = readByServer();
    // A fourth declared body, and a chunked one, do not fit: refused at their first bytes.
    const declared = await streamBody({ port: s.port, path: HOOK, headers, contentLength: MB, budget: MB, patienceMs: 10_000 });
    expect(statusOf(declared), declared.response.slice(0, 200)).toBe(503);
    expect(declared.response).toMatch(/retry-after: 1/i);
    const chunked = await streamBody({ port: s.port, path: HOOK, headers, budget: 8 * MB, patienceMs: 10_000 });
    expect(statusOf(chunked), chunked.response.slice(0, 200)).toBe(503);
    expect(readByServer() - before).toBeLessThan(SLACK);
    // /health needs no body, and a client that goes away gives its share back.
    expect((await fetch(`http://127.0.0.1:${s.port}/health`)).status).toBe(200);
    held[0]!.close();
    for (let i = 0; budget.inUse > 2 * MB; i++) {
      if (i > 200) throw new Error(`still held: ${budget.inUse}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const ok = await deliverWebhook(`http://127.0.0.1:${s.port}${HOOK}`, { event: 'ping', payload: { zen: 'fits again', hook_id: 3 }, secret: SECRET });
    expect(ok.status).toBe(200);
    for (const h of held) h.close();
    for (let i = 0; budget.inUse > 0; i++) {
      if (i > 200) throw new Error(`still held: ${budget.inUse}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  });
});

describe('goal-loop serve (the real process, its real logger) under an unsigned flood', () => {
  it('attack: 8 MB of letters with a wrong signature: 401, /health answers meanwhile, nothing of it logged, SIGTERM still stops it', async () => {
    const dir = await tempDir();
    const secret = 'a-long-random-test-secret';
    await writeFile(join(dir, '.env'), `APP_ID=4242\nPRIVATE_KEY="${privateKey().replace(/\n/g, '\\n')}"\nWEBHOOK_SECRET=${secret}\n`);
    const port = await freePort();
    const env = { PORT: String(port), HOST: '127.0.0.1', GOAL_LOOP_DB: join(dir, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(dir, 'ws'), LOG_LEVEL: 'info' };
    const { child, done } = startCli(['serve'], env, dir);
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    try {
      for (let i = 0; !stderr.includes('goal-loop is listening'); i++) {
        if (i > 600) throw new Error(`serve did not start:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const base = `http://127.0.0.1:${port}`;
      const body = `{"zen":"${'a'.repeat(8 * MB)}","hook_id":1}`;
      const forged = fetch(`${base}${HOOK}`, { method: 'POST', headers: webhookHeaders({ event: 'ping', secret: 'development', body }), body, signal: AbortSignal.timeout(30_000) }).then(
        (r) => r.status,
        (err: unknown) => String(err),
      );
      for (let i = 0; i < 5; i++) {
        expect((await fetch(`${base}/health`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await forged).toBe(401);
      expect((await fetch(`${base}/health`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      const exited = await Promise.race([done, new Promise<undefined>((r) => setTimeout(r, 20_000, undefined))]);
      if (!exited) child.kill('SIGKILL');
      expect(exited?.code, 'serve ignored SIGTERM').toBe(0);
    }
    const lines = stderr.split('\n').filter(Boolean);
    expect(lines.find((l) => l.includes('signature does not match'))).toBeDefined();
    expect(stderr).not.toContain('a'.repeat(100));
    for (const l of lines) expect(l.length).toBeLessThan(64 * 1024);
  });
});
