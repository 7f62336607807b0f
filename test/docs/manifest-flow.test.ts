import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';
import { tempDir } from '../helpers/temp.js';

// The README's manifest flow, in order: a reachable webhook URL first. The URL Probot's setup page
// registers is WEBHOOK_PROXY_URL when it is set, else the address the page was opened on, which
// GitHub cannot reach on a development machine. (smee-client is not installed here, so without
// WEBHOOK_PROXY_URL the flow makes no channel: the localhost case the README warns about.)

const APP_YML = fileURLToPath(new URL('../../app.yml', import.meta.url));
const UNSET = { APP_ID: '', PRIVATE_KEY: '', PRIVATE_KEY_PATH: '', WEBHOOK_SECRET: '', NODE_ENV: '', DATABASE_URL: '', NO_SMEE_SETUP: '' };

async function offeredWebhookUrl(env: Record<string, string>): Promise<string> {
  const dir = await tempDir();
  await copyFile(APP_YML, join(dir, 'app.yml'));
  const port = await freePort();
  const { child, done } = startCli(['serve'], { ...UNSET, PORT: String(port), HOST: '127.0.0.1', GOAL_LOOP_DB: join(dir, 'ledger.db'), ...env }, dir);
  try {
    const end = Date.now() + 30_000;
    while (true) {
      const page = await fetch(`http://127.0.0.1:${port}/probot`).catch(() => undefined);
      if (page?.status === 200) {
        const m = /name="manifest" id="manifest" value='([^']*)'/.exec(await page.text());
        expect(m).toBeTruthy();
        return (JSON.parse(m![1]!) as { hook_attributes: { url: string } }).hook_attributes.url;
      }
      if (Date.now() > end) throw new Error(`no setup page in 30 s:\n${(await Promise.race([done, Promise.resolve(undefined)]))?.stderr ?? ''}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    child.kill('SIGTERM');
    await done;
  }
}

describe('the manifest flow registers the webhook URL the README says', () => {
  it('WEBHOOK_PROXY_URL when it is set (a smee channel made beforehand)', async () => {
    expect(await offeredWebhookUrl({ WEBHOOK_PROXY_URL: 'https://smee.io/goal-loop-docs-test' })).toBe('https://smee.io/goal-loop-docs-test');
  });

  it('else the address the page was opened on: localhost, which GitHub cannot reach', async () => {
    expect(await offeredWebhookUrl({ WEBHOOK_PROXY_URL: '' })).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });
});
