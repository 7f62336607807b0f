import type { Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/github/server/serve.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import { startBareServer } from '../helpers/bare-server.js';
import { SECRET } from '../helpers/github-app-harness.js';
import { type RawExchange, statusOf, streamBody as streamRaw } from '../helpers/raw-http.js';
import { deliverWebhook, webhookHeaders } from '../helpers/webhook-payloads.js';

const MB = 1024 * 1024;
const CAP = 25 * MB; // GitHub's own limit for a delivery
const HOOK = '/api/github/webhooks';
// What the server may read past the point where it refuses: socket reads in flight, headers.
const SLACK = 2 * MB;

let store: Store;
let server: RunningServer;
/** Bytes the server read from each connection, as its own sockets count them. */
let serverReads: Socket[];

beforeEach(async () => {
  ({ server, store } = await startBareServer());
  serverReads = [];
  server.server.on('connection', (s: Socket) => serverReads.push(s));
});

afterEach(async () => {
  await server.close();
  await store.close();
});

/** A delivery streamed raw, with a signature header of the right shape (for another body). */
function streamBody(o: { contentLength?: number; budget: number }): Promise<RawExchange> {
  const headers = webhookHeaders({ event: 'ping', secret: SECRET, body: 'not the body' });
  return streamRaw({ port: server.port, path: HOOK, headers, ...o });
}

const readByServer = () => serverReads.reduce((n, s) => n + s.bytesRead, 0);

async function stillServes(): Promise<void> {
  const base = `http://127.0.0.1:${server.port}`;
  expect((await fetch(`${base}/health`)).status).toBe(200);
  // A signed delivery (non-ASCII included: the body reaches verification byte for byte).
  const ok = await deliverWebhook(`${base}${HOOK}`, { event: 'ping', payload: { zen: 'Design for failure — ünïcödé ✓', hook_id: 7 }, secret: SECRET });
  expect(ok.status).toBe(200);
  // The same, streamed chunked (no Content-Length), 1 MB of it.
  const body = JSON.stringify({ zen: 'x'.repeat(MB), hook_id: 8 });
  const chunked = await fetch(`${base}${HOOK}`, {
    method: 'POST',
    headers: webhookHeaders({ event: 'ping', secret: SECRET, body }),
    body: new ReadableStream({
      start(c) {
        for (let i = 0; i < body.length; i += 100_000) c.enqueue(new TextEncoder().encode(body.slice(i, i + 100_000)));
        c.close();
      },
    }),
    duplex: 'half',
  } as RequestInit);
  expect(chunked.status).toBe(200);
  const forged = await deliverWebhook(`${base}${HOOK}`, { event: 'ping', payload: { zen: 'forged', hook_id: 9 }, secret: 'wrong' });
  expect(forged.status).toBe(401);
}

describe('webhook bodies are capped at 25 MB', () => {
  it('a declared 300 MB body gets 413 at once and the connection is closed unread', async () => {
    const x = await streamBody({ contentLength: 300 * MB, budget: 64 * MB });
    expect(statusOf(x), x.response.slice(0, 200)).toBe(413);
    expect(x.closedByServer).toBe(true);
    expect(x.sent).toBeLessThan(64 * MB); // the client never got to send its budget
    expect(readByServer()).toBeLessThan(SLACK); // the body was not read, let alone buffered
    await stillServes();
  });

  it('a chunked body that streams past the cap gets 413 and the server stops reading there', async () => {
    const x = await streamBody({ budget: 64 * MB });
    expect(statusOf(x), x.response.slice(0, 200)).toBe(413);
    expect(x.closedByServer).toBe(true);
    expect(x.sent).toBeLessThan(64 * MB);
    expect(readByServer()).toBeGreaterThan(CAP); // it read up to the cap...
    expect(readByServer()).toBeLessThan(CAP + SLACK); // ...and not much further
    await stillServes();
  });

  it('a body just under the cap is still read and verified (here: a wrong signature, 401)', async () => {
    const body = `{"zen":"${'x'.repeat(CAP - 64)}"}`;
    const r = await fetch(`http://127.0.0.1:${server.port}${HOOK}`, {
      method: 'POST',
      headers: webhookHeaders({ event: 'ping', secret: 'wrong', body }),
      body,
    });
    expect(r.status).toBe(401);
    await stillServes();
  });
});
