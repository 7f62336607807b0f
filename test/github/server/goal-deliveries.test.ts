import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../../../src/github/server/serve.js';
import type { Store } from '../../../src/ledger/open-ledger.js';
import { ProcessSandbox } from '../../../src/sandbox/process-sandbox.js';
import { type FakeGitHub, fakeGitHub } from '../../helpers/fake-github.js';
import { INSTALLATION, OWNER, privateKey, REPO, SECRET, silent, TestOctokit } from '../../helpers/github-app-harness.js';
import { tempDir } from '../../helpers/temp.js';
import { openTestStore } from '../../helpers/test-store.js';
import { deliverWebhook, installationCreated, issueCommentCreated, webhookHeaders } from '../../helpers/webhook-payloads.js';

const issue = { number: 7, title: 'Served', body: 'no goal here', user: 'alice' };
const command = (sender: string) =>
  issueCommentCreated({ owner: OWNER, repo: REPO, installationId: INSTALLATION, cloneUrl: 'https://github.com/x/y.git', sender, issue, comment: { body: '/goal status' } });

let server: RunningServer | undefined;
let store: Store | undefined;
let fake: FakeGitHub | undefined;

afterEach(async () => {
  await server?.close();
  fake?.stop();
  await store?.close();
  server = store = fake = undefined;
});

/** The real server on a fresh store; `inbox` may replace the store's ledger (a broken database). */
async function serve(ledger?: (real: Store['ledger']) => Store['ledger']): Promise<string> {
  const root = await tempDir();
  fake = fakeGitHub({ owner: OWNER, repo: REPO, installationId: INSTALLATION, collaborators: { alice: 'admin', eve: 'read' }, issues: [issue] });
  store = await openTestStore(root);
  const served = ledger ? { ...store, ledger: ledger(store.ledger) } : store;
  server = await startServer({
    store: served,
    workspaceRoot: join(root, 'ws'),
    sandboxFor: async () => new ProcessSandbox(),
    env: {},
    port: 0,
    host: '127.0.0.1',
    queueReport: { intervalMs: 0, refreshesPerMinute: 1 },
    probotOverrides: { overrides: { appId: 1, privateKey: privateKey(), secret: SECRET, log: silent, Octokit: TestOctokit } },
  });
  return `http://127.0.0.1:${server.port}/api/github/webhooks`;
}

describe('goal deliveries: straight to the inbox', () => {
  it('answers a command only once it is in the inbox, records a redelivery once, and still asks GitHub whether its sender may write', async () => {
    const url = await serve();
    const ids = Array.from({ length: 6 }, () => randomUUID());
    // Delivered at once (written together), one of them twice.
    const answers = await Promise.all([...ids, ids[0]!].map((deliveryId, i) => deliverWebhook(url, { event: 'issue_comment', payload: command(i % 2 ? 'eve' : 'alice'), secret: SECRET, deliveryId })));
    expect(answers.map((a) => a.status)).toEqual(Array(7).fill(200));
    for (const id of ids) expect(await store!.ledger.recordDelivery(id)).toBe(false); // already there
    await server!.runtime.idle();
    // Each command's sender was looked up once (the redelivery was not handled again): eve's read access commands nothing.
    expect(fake!.calls('GET', /collaborators\/alice\/permission/)).toHaveLength(3);
    expect(fake!.calls('GET', /collaborators\/eve\/permission/)).toHaveLength(3);
    expect(fake!.violations).toEqual([]);
  });

  it('answers 500, not 200, when the inbox cannot take the delivery', async () => {
    const url = await serve((real) => Object.assign(Object.create(real) as Store['ledger'], { recordDeliveries: () => Promise.reject(new Error('disk I/O error')) }));
    const answer = await deliverWebhook(url, { event: 'issue_comment', payload: command('alice'), secret: SECRET });
    expect(answer.status).toBe(500);
    await server!.runtime.idle();
    expect(fake!.requests).toEqual([]);
  });

  it('leaves other events and what Probot refuses to Probot', async () => {
    const url = await serve();
    const installed = await deliverWebhook(url, { event: 'installation', payload: installationCreated({ owner: OWNER, repo: REPO, installationId: INSTALLATION }), secret: SECRET });
    expect(installed.status).toBe(200);
    const body = JSON.stringify(command('alice'));
    const notJson = await fetch(url, { method: 'POST', headers: { ...webhookHeaders({ event: 'issue_comment', secret: SECRET, body }), 'content-type': 'text/plain' }, body });
    expect(notJson.status).toBe(415);
    const garbled = '{"action": "created",';
    const invalid = await fetch(url, { method: 'POST', headers: webhookHeaders({ event: 'issue_comment', secret: SECRET, body: garbled }), body: garbled });
    expect(invalid.status).toBe(400);
    await server!.runtime.idle();
    expect(await store!.ledger.unhandledDeliveries()).toEqual([]);
  });
});
