import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { privateKey } from '../helpers/github-app-harness.js';
import { tempDir } from '../helpers/temp.js';

describe('goal-loop serve and worker as processes', () => {
  it('serve starts from the environment, answers /health, and exits 0 on SIGTERM', async () => {
    const root = await tempDir();
    const { child, done } = startCli(['serve'], {
      APP_ID: '1',
      PRIVATE_KEY: privateKey(),
      WEBHOOK_SECRET: 'secret',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      GOAL_LOOP_DB: join(root, 'ledger.db'),
      GOAL_LOOP_WORKSPACES: join(root, 'ws'),
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString())); // the logs (Probot's too) are on stderr
    const end = Date.now() + 30_000;
    let port: number | undefined;
    while (!port) {
      if (Date.now() > end || child.exitCode !== null) throw new Error(`serve did not start:\n${out}\n${(await Promise.race([done, Promise.resolve(undefined)]))?.stderr ?? ''}`);
      const m = /"port":(\d+)[^\n]*goal-loop is listening/.exec(out);
      if (m) port = Number(m[1]);
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect(out).toMatch(/"role":"both"/); // embedded: webhooks and workers in one process
    child.kill('SIGTERM');
    const r = await done;
    expect(r.code).toBe(0);
  });

  it('worker refuses to start without the app credentials (exit 1, one clear line)', async () => {
    const root = await tempDir();
    const r = await runCli(['worker'], { APP_ID: '', PRIVATE_KEY: '', PRIVATE_KEY_PATH: '', GOAL_LOOP_DB: join(root, 'ledger.db') });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/worker needs APP_ID and PRIVATE_KEY/);
    const bad = await runCli(['worker', '--concurrency', 'zero'], { APP_ID: '1', PRIVATE_KEY: privateKey() });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--concurrency must be a whole number/);
  });
});
