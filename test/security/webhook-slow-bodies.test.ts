import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/cli/logging.js';
import { ByteBudget, MAX_BODY_BYTES_IN_FLIGHT } from '../../src/github/server/body-cap.js';
import type { RunningServer } from '../../src/github/server/serve.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import { startBareServer } from '../helpers/bare-server.js';
import { SECRET, silent } from '../helpers/github-app-harness.js';
import { holdBody, postFrom, statusOf } from '../helpers/raw-http.js';
import { webhookHeaders } from '../helpers/webhook-payloads.js';

// Without the secret, a client can still send a well-formed signature header and then its body
// slowly, or never: it must not keep signed deliveries out for long, or at all from elsewhere.
const MB = 1024 * 1024;
const HOOK = '/api/github/webhooks';
const FAKE = { ...webhookHeaders({ event: 'ping', secret: SECRET, body: '' }), 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` };

let store: Store | undefined;
let server: RunningServer | undefined;
let held: { close(): void }[] = [];

async function serve(o: { bodyBudget: ByteBudget; bodyIdleMs: number }, log = silent): Promise<RunningServer> {
  ({ server, store } = await startBareServer(o, log));
  return server;
}

afterEach(async () => {
  for (const h of held) h.close();
  held = [];
  await server?.close();
  await store?.close();
  server = undefined;
  store = undefined;
});

/** A signed delivery of about `bytes`, sent whole (as GitHub does) from `from`. */
function signed(port: number, o: { from?: string; bytes?: number; id?: string } = {}) {
  const body = JSON.stringify({ zen: 'z'.repeat(o.bytes ?? 10), hook_id: 1 });
  return postFrom({ port, path: HOOK, headers: webhookHeaders({ event: 'ping', deliveryId: o.id, secret: SECRET, body }), body, from: o.from });
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; !ok(); i++) {
    if (i > 400) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The answer, or 'none' if there is none within a bound far under the 30 s request deadline. */
const within = (answer: Promise<string>, ms = 10_000) => Promise.race([answer, new Promise<string>((r) => setTimeout(r, ms, 'none'))]);

describe('declared sizes hold nothing: the budget is charged as bytes arrive', () => {
  it('attack: three header-only bodies declaring 25, 25 and 14 MiB under a fake signature do not keep a signed delivery out', async () => {
    const budget = new ByteBudget(MAX_BODY_BYTES_IN_FLIGHT);
    // A long idle timeout: what lets the delivery in here is the charging, not the timeout.
    const s = await serve({ bodyBudget: budget, bodyIdleMs: 60_000 });
    let requests = 0;
    s.server.on('request', () => requests++);
    held = [25, 25, 14].map((mb) => holdBody({ port: s.port, path: HOOK, headers: FAKE, contentLength: mb * MB, sendBytes: 0 }));
    await until('the three held requests', () => requests >= 3);
    await new Promise((r) => setTimeout(r, 100));
    const ok = await signed(s.port, { id: 'during-hold' });
    expect(statusOf(ok), ok.response.slice(0, 300)).toBe(200);
    expect(budget.inUse).toBe(0);
    // Also a large one, from the same address as the holders.
    const big = await signed(s.port, { bytes: 20 * MB });
    expect(statusOf(big), big.response.slice(0, 300)).toBe(200);
  });
});

describe('a body that stops arriving is dropped after the idle timeout', () => {
  it('attack: a header-only request and one that goes quiet mid-body get 408 and are closed; their bytes are given back', async () => {
    const budget = new ByteBudget(MAX_BODY_BYTES_IN_FLIGHT);
    const s = await serve({ bodyBudget: budget, bodyIdleMs: 300 });
    const silentOne = holdBody({ port: s.port, path: HOOK, headers: FAKE, contentLength: 25 * MB, sendBytes: 0 });
    const quietOne = holdBody({ port: s.port, path: HOOK, headers: FAKE, contentLength: 2 * MB, sendBytes: MB });
    held = [silentOne, quietOne];
    for (const h of [silentOne, quietOne]) expect((await within(h.answer)).split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    await until('the budget to be given back', () => budget.inUse === 0);
    const ok = await signed(s.port);
    expect(statusOf(ok), ok.response.slice(0, 300)).toBe(200);
  });

  it('a sender that hangs up mid-body gives its bytes back, and is no server error in the log', async () => {
    let out = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        out += chunk.toString();
        done();
      },
    });
    const budget = new ByteBudget(MAX_BODY_BYTES_IN_FLIGHT);
    const s = await serve({ bodyBudget: budget, bodyIdleMs: 60_000 }, createLogger('info', sink));
    const gone = holdBody({ port: s.port, path: HOOK, headers: FAKE, contentLength: 2 * MB, sendBytes: MB });
    await until('the held bytes', () => budget.inUse >= MB);
    gone.close();
    await until('the budget to be given back', () => budget.inUse === 0);
    const ok = await signed(s.port);
    expect(statusOf(ok), ok.response.slice(0, 300)).toBe(200);
    expect(out).not.toContain('request failed');
  });
});

describe('one address may hold only its share of the budget', () => {
  it('attack: an address holding real bytes is refused more (503, retry-after, closed); other addresses still deliver', async () => {
    const budget = new ByteBudget(8 * MB, 4 * MB);
    const s = await serve({ bodyBudget: budget, bodyIdleMs: 60_000 });
    // 3 MB sent, one byte short of the declared size: held.
    held = [holdBody({ port: s.port, path: HOOK, headers: FAKE, contentLength: 3 * MB, sendBytes: 3 * MB - 1, from: '127.0.0.2' })];
    await until('the held bytes', () => budget.inUse >= 3 * MB - 1);
    const more = await postFrom({ port: s.port, path: HOOK, headers: FAKE, body: ' '.repeat(2 * MB), from: '127.0.0.2' });
    expect(statusOf(more), more.response.slice(0, 300)).toBe(503);
    expect(more.response).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(more.response).toMatch(/\r\nconnection: close\r\n/i);
    // GitHub, elsewhere, delivers 3 MB while the holder keeps its 3 MB.
    const elsewhere = await signed(s.port, { from: '127.0.0.3', bytes: 3 * MB });
    expect(statusOf(elsewhere), elsewhere.response.slice(0, 300)).toBe(200);
    expect(budget.inUse).toBeGreaterThanOrEqual(3 * MB - 1);
  });
});

describe("GitHub's own traffic passes the per-address share", () => {
  it('50 concurrent 100 KB deliveries and a 24 MB one, all from one address, are all taken', async () => {
    const budget = new ByteBudget(MAX_BODY_BYTES_IN_FLIGHT);
    // Generous: this is about the share, and a loaded machine must not turn it into an idle-timeout test.
    const s = await serve({ bodyBudget: budget, bodyIdleMs: 30_000 });
    const all = await Promise.all([signed(s.port, { bytes: 24 * MB }), ...Array.from({ length: 50 }, () => signed(s.port, { bytes: 100 * 1024 }))]);
    expect(all.map((x) => statusOf(x))).toEqual(all.map(() => 200));
    await until('the budget to be given back', () => budget.inUse === 0);
  });
});
