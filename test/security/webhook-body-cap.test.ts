import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/ledger/open-ledger.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { startServer, type RunningServer } from '../../src/github/server/serve.js';
import { privateKey, SECRET, silent, TestOctokit } from '../helpers/github-app-harness.js';
import { tempDir } from '../helpers/temp.js';
import { openTestStore } from '../helpers/test-store.js';
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
  const root = await tempDir();
  store = await openTestStore(root);
  server = await startServer({
    store,
    workspaceRoot: join(root, 'ws'),
    sandboxFor: async () => new ProcessSandbox(),
    env: {},
    port: 0,
    host: '127.0.0.1',
    probotOverrides: { overrides: { appId: 1, privateKey: privateKey(), secret: SECRET, log: silent, Octokit: TestOctokit } },
  });
  serverReads = [];
  server.server.on('connection', (s: Socket) => serverReads.push(s));
});

afterEach(async () => {
  await server.close();
  await store.close();
});

interface Exchange {
  /** The raw response, if any arrived. */
  response: string;
  /** Body bytes the client handed to its socket before it stopped. */
  sent: number;
  /** The server hung up (rather than the client giving up after the response). */
  closedByServer: boolean;
}

/**
 * A client that keeps sending body bytes (up to `budget`, honouring backpressure) until the
 * server answers or hangs up. Chunked when `contentLength` is undefined.
 */
function streamBody(o: { contentLength?: number; budget: number }): Promise<Exchange> {
  const headers = { ...webhookHeaders({ event: 'ping', secret: SECRET, body: 'not the body' }), host: '127.0.0.1' };
  const framing = o.contentLength === undefined ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(o.contentLength) };
  const head = `POST ${HOOK} HTTP/1.1\r\n${Object.entries({ ...headers, ...framing })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const frame = o.contentLength === undefined ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
  return new Promise((resolve) => {
    const socket = connect(server.port, '127.0.0.1');
    const x: Exchange = { response: '', sent: 0, closedByServer: true };
    let answered = false;
    socket.on('data', (d: Buffer) => {
      x.response += d.toString('latin1');
      if (answered) return;
      answered = true;
      // Guard against a server that answers but keeps the connection open (the old behaviour);
      // well above the second a refusing server waits before it drops the connection.
      setTimeout(() => {
        x.closedByServer = false;
        socket.destroy();
      }, 10_000).unref();
    });
    socket.on('error', () => undefined); // EPIPE / ECONNRESET once the server hangs up
    socket.on('close', () => resolve(x));
    socket.on('connect', async () => {
      socket.write(head);
      while (!answered && !socket.destroyed && x.sent < o.budget) {
        x.sent += chunk.length;
        if (!socket.write(frame)) await writable(socket);
      }
      // Budget spent without an answer: finish the body so a server that reads it all answers.
      if (!answered && !socket.destroyed && o.contentLength === undefined) socket.write('0\r\n\r\n');
    });
  });
}

/** Resolves when the socket can take more, or is gone. */
function writable(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done).off('close', done);
      resolve();
    };
    socket.on('drain', done).on('close', done);
  });
}

const statusOf = (x: Exchange) => Number(/^HTTP\/1\.1 (\d{3})/.exec(x.response)?.[1]);
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
  expect(forged.status).toBe(400);
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

  it('a body just under the cap is still read and verified (here: a wrong signature, 400)', async () => {
    const body = `{"zen":"${'x'.repeat(CAP - 64)}"}`;
    const r = await fetch(`http://127.0.0.1:${server.port}${HOOK}`, {
      method: 'POST',
      headers: webhookHeaders({ event: 'ping', secret: 'wrong', body }),
      body,
    });
    expect(r.status).toBe(400);
    await stillServes();
  });
});
