import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer } from '../../src/github/server/serve.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { type CliResult, startCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';
import { privateKey, silent, TestOctokit } from '../helpers/github-app-harness.js';
import { tempDir } from '../helpers/temp.js';
import { openTestStore } from '../helpers/test-store.js';
import { deliverWebhook } from '../helpers/webhook-payloads.js';

// Probot falls back to this public secret when none is configured.
const PROBOT_DEFAULT_SECRET = 'development';

/** A delivery anyone could forge: signed with Probot's default secret. */
function forgedPing(port: number): Promise<Response> {
  return deliverWebhook(`http://127.0.0.1:${port}/api/github/webhooks`, {
    event: 'ping',
    payload: { zen: 'forged', hook_id: 1 },
    secret: PROBOT_DEFAULT_SECRET,
  });
}

/**
 * Runs `goal-loop serve` with app credentials and the given WEBHOOK_SECRET (undefined: unset).
 * Resolves when it exits; if it starts listening instead, returns what a forged delivery got.
 */
async function serveWithSecret(secret: string | undefined): Promise<{ exit?: CliResult; forgedStatus?: number; port: number }> {
  const root = await tempDir();
  const port = await freePort();
  const env: Record<string, string | undefined> = {
    APP_ID: '1',
    PRIVATE_KEY: privateKey(),
    PRIVATE_KEY_PATH: '',
    WEBHOOK_SECRET: secret, // child_process drops undefined entries: the variable is unset
    PORT: String(port),
    HOST: '127.0.0.1',
    GOAL_LOOP_DB: join(root, 'ledger.db'),
    GOAL_LOOP_WORKSPACES: join(root, 'ws'),
  };
  const { child, done } = startCli(['serve'], env as Record<string, string>);
  let exited: CliResult | undefined;
  void done.then((r) => (exited = r));
  try {
    // Either it exits, or it comes up (old behaviour): then see whether a forgery gets in.
    while (true) {
      if (exited) return { exit: exited, port };
      const health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined);
      if (health?.status === 200) return { forgedStatus: (await forgedPing(port)).status, port };
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    if (!exited) {
      child.kill('SIGKILL');
      await done;
    }
  }
}

describe('serve refuses to take webhooks it cannot authenticate', () => {
  for (const [label, secret] of [
    ['unset', undefined],
    ['empty', ''],
    ['blank', '   '],
    [`Probot's public default "${PROBOT_DEFAULT_SECRET}"`, PROBOT_DEFAULT_SECRET],
  ] as const) {
    it(`exits 1 with one line naming WEBHOOK_SECRET when it is ${label}, and never listens`, async () => {
      const r = await serveWithSecret(secret);
      expect(r.forgedStatus, 'serve started and answered a delivery signed with "development"').toBeUndefined();
      expect(r.exit!.code).toBe(1);
      const lines = r.exit!.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^goal-loop: .*WEBHOOK_SECRET/);
      expect(r.exit!.stderr).not.toMatch(/\n\s+at /); // no stack trace
      // Nothing is left listening on the port it was given.
      await expect(forgedPing(r.port)).rejects.toThrow();
    });
  }

  it('startServer (the programmatic entry) refuses too, before anything listens', async () => {
    const root = await tempDir();
    const store = await openTestStore(root);
    const port = await freePort();
    try {
      for (const secret of [undefined, '', PROBOT_DEFAULT_SECRET]) {
        const attempt = startServer({
          store,
          workspaceRoot: join(root, 'ws'),
          sandboxFor: async () => new ProcessSandbox(),
          env: secret === undefined ? {} : { WEBHOOK_SECRET: secret },
          port,
          host: '127.0.0.1',
          probotOverrides: { overrides: { appId: 1, privateKey: privateKey(), log: silent, Octokit: TestOctokit } },
        }).then(
          async (server) => {
            const forged = await forgedPing(server.port);
            await server.close();
            return `started; a forged delivery got ${forged.status}`;
          },
          (err: unknown) => err,
        );
        const outcome = await attempt;
        expect(outcome, `secret ${JSON.stringify(secret)}`).toBeInstanceOf(Error);
        expect((outcome as Error).message).toMatch(/WEBHOOK_SECRET/);
        await expect(forgedPing(port)).rejects.toThrow();
      }
    } finally {
      await store.close();
    }
  });

  it('worker does not take webhooks, so it starts without WEBHOOK_SECRET', async () => {
    const root = await tempDir();
    const { child, done } = startCli(['worker'], {
      APP_ID: '1',
      PRIVATE_KEY: privateKey(),
      WEBHOOK_SECRET: undefined as unknown as string, // unset
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      GOAL_LOOP_DB: join(root, 'ledger.db'),
      GOAL_LOOP_WORKSPACES: join(root, 'ws'),
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString())); // the logs (Probot's too) are on stderr
    let exited: CliResult | undefined;
    void done.then((r) => (exited = r));
    while (!/goal-loop worker is running/.test(out)) {
      if (exited) throw new Error(`worker exited ${exited.code}:\n${exited.stdout}\n${exited.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGTERM');
    expect((await done).code).toBe(0);
  });
});
