import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, startCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';
import { holdBody, statusOf, streamBody } from '../helpers/raw-http.js';

// Probot's setup flow (no APP_ID yet) serves its own pages from its own server, whose handlers
// read request bodies whole with no limit. Anyone who can reach it may post to it.
const APP_YML = fileURLToPath(new URL('../../app.yml', import.meta.url));
const MB = 1024 * 1024;
const UNSET = {
  APP_ID: undefined,
  PRIVATE_KEY: undefined,
  PRIVATE_KEY_PATH: undefined,
  WEBHOOK_SECRET: undefined,
  LOG_LEVEL: undefined,
  NODE_ENV: undefined,
  WEBHOOK_PROXY_URL: undefined,
  DATABASE_URL: undefined,
};

let dir: string;
let port: number;
let setup: { child: ReturnType<typeof startCli>['child']; done: Promise<CliResult> };
let stderr = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'goal-loop-setup-')); // for the whole file: tempDir() is per test
  await copyFile(APP_YML, join(dir, 'app.yml'));
  port = await freePort();
  setup = startCli(['serve'], { ...UNSET, NO_SMEE_SETUP: 'true', PORT: String(port), HOST: '127.0.0.1', GOAL_LOOP_DB: join(dir, 'ledger.db') } as unknown as Record<string, string>, dir);
  setup.child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const end = Date.now() + 30_000;
  while (true) {
    const page = await fetch(`http://127.0.0.1:${port}/probot`).catch(() => undefined);
    if (page?.status === 200) break;
    if (Date.now() > end) throw new Error(`no setup page:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});

afterAll(async () => {
  setup.child.kill('SIGKILL');
  await setup.done;
  await rm(dir, { recursive: true, force: true });
});

describe("Probot's setup-flow server reads bodies through the same cap", () => {
  for (const path of ['/probot/import', '/api/github/webhooks']) {
    it(`attack: a declared 300 MB POST to ${path} gets 413 at once, unread`, async () => {
      const x = await streamBody({ port, path, headers: { 'content-type': 'application/json' }, contentLength: 300 * MB, budget: 32 * MB, patienceMs: 10_000 });
      expect(statusOf(x), x.response.slice(0, 200) || stderr.slice(-2000)).toBe(413);
      expect(x.closedByServer).toBe(true);
      expect(x.sent).toBeLessThan(32 * MB);
    });
  }

  it('attack: a chunked POST past 25 MB gets 413 there', async () => {
    const x = await streamBody({ port, path: '/probot/import', headers: { 'content-type': 'application/json' }, budget: 40 * MB, patienceMs: 10_000 });
    expect(statusOf(x), x.response.slice(0, 200) || stderr.slice(-2000)).toBe(413);
    expect(x.sent).toBeLessThan(40 * MB);
  });

  it('attack: a POST declaring 25 MB that sends nothing is answered 408 after the idle timeout (5 s), not held', async () => {
    const held = holdBody({ port, path: '/probot/import', headers: { 'content-type': 'application/json' }, contentLength: 25 * MB, sendBytes: 0 });
    try {
      // A bound far under Node's own 300 s request deadline for this server.
      const answer = await Promise.race([held.answer, new Promise<string>((r) => setTimeout(r, 20_000, 'none'))]);
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    } finally {
      held.close();
    }
  });

  it('still takes a real import (a small body) and its pages', async () => {
    expect((await fetch(`http://127.0.0.1:${port}/probot`)).status).toBe(200);
    const r = await fetch(`http://127.0.0.1:${port}/probot/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ appId: '4343', pem: 'not-a-real-key', webhook_secret: 'imported-secret' }),
    });
    expect(r.status, stderr.slice(-3000)).toBe(200);
    expect(await readFile(join(dir, '.env'), 'utf8')).toContain('WEBHOOK_SECRET=imported-secret');
  });
});
