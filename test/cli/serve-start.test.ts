import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadDotEnv } from '../../src/cli/dotenv.js';
import { type CliResult, runCli, startCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';
import { privateKey } from '../helpers/github-app-harness.js';
import { tempDir } from '../helpers/temp.js';
import { deliverWebhook } from '../helpers/webhook-payloads.js';

const APP_YML = fileURLToPath(new URL('../../app.yml', import.meta.url));

/** Variables the child must not inherit: it has to find the credentials (or miss them) itself. */
const UNSET = {
  APP_ID: undefined,
  PRIVATE_KEY: undefined,
  PRIVATE_KEY_PATH: undefined,
  WEBHOOK_SECRET: undefined,
  LOG_LEVEL: undefined,
  LOG_FORMAT: undefined,
  NODE_ENV: undefined,
  WEBHOOK_PROXY_URL: undefined,
  DATABASE_URL: undefined,
};

/** A .env as Probot's setup flow writes it (the key on one line, newlines escaped, in double quotes). */
function dotEnv(vars: { APP_ID: string; PRIVATE_KEY: string; WEBHOOK_SECRET: string }): string {
  return `APP_ID=${vars.APP_ID}\nPRIVATE_KEY="${vars.PRIVATE_KEY.replace(/\n/g, '\\n')}"\nWEBHOOK_SECRET=${vars.WEBHOOK_SECRET}`;
}

/** Starts `goal-loop <args>` in `cwd` and waits until `ready` matches its stderr (or it exits). */
async function startUntil(args: string[], env: Record<string, string | undefined>, cwd: string, ready: RegExp) {
  const { child, done } = startCli(args, env as Record<string, string>, cwd);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  let exited: CliResult | undefined;
  void done.then((r) => (exited = r));
  const end = Date.now() + 30_000;
  while (!ready.test(stderr)) {
    if (exited) throw new Error(`goal-loop ${args.join(' ')} exited ${exited.code} before it was ready:\n${exited.stdout}\n${exited.stderr}`);
    if (Date.now() > end) throw new Error(`goal-loop ${args.join(' ')} was not ready in 30 s:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    stderr: () => stderr,
    async stop(): Promise<CliResult> {
      if (!exited) child.kill('SIGTERM');
      return done;
    },
  };
}

describe('goal-loop serve: start from .env, one start line, refusal in production', () => {
  it('reads the credentials from ./.env: /health is 200 and a signed delivery is taken; one start line at the default level', async () => {
    const dir = await tempDir();
    const secret = 'a-long-random-test-secret';
    await writeFile(join(dir, '.env'), dotEnv({ APP_ID: '4242', PRIVATE_KEY: privateKey(), WEBHOOK_SECRET: secret }));
    const port = await freePort();
    const serve = await startUntil(
      ['serve'],
      { ...UNSET, PORT: String(port), HOST: '127.0.0.1', GOAL_LOOP_DB: join(dir, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(dir, 'ws') },
      dir,
      /goal-loop is listening/,
    );
    try {
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status).toBe(200);
      const ping = await deliverWebhook(`http://127.0.0.1:${port}/api/github/webhooks`, { event: 'ping', payload: { zen: 'hi', hook_id: 1 }, secret });
      expect(ping.status, await ping.text()).toBeGreaterThanOrEqual(200);
      expect(ping.status).toBeLessThan(300);
      // The manifest flow registers the root URL: a delivery there is taken too.
      const atRoot = await deliverWebhook(`http://127.0.0.1:${port}/`, { event: 'ping', payload: { zen: 'root', hook_id: 1 }, secret });
      expect(atRoot.status).toBeGreaterThanOrEqual(200);
      expect(atRoot.status).toBeLessThan(300);
      // A wrong signature is still refused: the .env secret is the one in force.
      const forged = await deliverWebhook(`http://127.0.0.1:${port}/api/github/webhooks`, { event: 'ping', payload: { zen: 'x', hook_id: 1 }, secret: 'development' });
      expect(forged.status).toBeGreaterThanOrEqual(400);

      // (b) Exactly one start line, JSON (one format), naming where, which app, which store, the jail.
      const lines = serve.stderr().split('\n').filter(Boolean);
      const startLines = lines.filter((l) => l.includes('goal-loop is listening'));
      expect(startLines).toHaveLength(1);
      for (const l of lines) expect((): unknown => JSON.parse(l), `not a JSON log line: ${l}`).not.toThrow();
      const start = JSON.parse(startLines[0]!) as Record<string, unknown>;
      expect(start).toMatchObject({ level: 30, port, host: '127.0.0.1', webhooksPath: '/api/github/webhooks', appId: '4242', store: `SQLite ${join(dir, 'ledger.db')}` });
      expect(start.jail).toMatch(/^bwrap (usable|unusable: .+)$/);
      expect(start.msg).toContain(`127.0.0.1:${port}/api/github/webhooks`);
      expect(start.msg).toContain('app 4242');
    } finally {
      const r = await serve.stop();
      expect(r.code).toBe(0);
    }
  });

  it('credentials in .env that the environment blanks: one line, exit 1, no setup flow and no empty app', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, '.env'), dotEnv({ APP_ID: '4242', PRIVATE_KEY: privateKey(), WEBHOOK_SECRET: 'a-long-random-test-secret' }));
    const port = await freePort();
    const r = await runCli(
      ['serve'],
      { ...UNSET, APP_ID: '', NO_SMEE_SETUP: 'true', PORT: String(port), HOST: '127.0.0.1', GOAL_LOOP_DB: join(dir, 'ledger.db') } as unknown as Record<string, string>,
      dir,
    );
    expect(r.code).toBe(1);
    const lines = r.stderr.split('\n').filter(Boolean);
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^goal-loop: serve refuses to start: APP_ID is set but empty/);
  });

  it('the environment wins over .env', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, '.env'), 'APP_ID=1\nWEBHOOK_SECRET="from file"\nEXTRA=x\n');
    const env: NodeJS.ProcessEnv = { APP_ID: '7', WEBHOOK_SECRET: '' };
    expect(loadDotEnv(dir, env)).toBe(join(dir, '.env'));
    expect(env).toEqual({ APP_ID: '7', WEBHOOK_SECRET: '', EXTRA: 'x' });
    expect(loadDotEnv(await tempDir(), env)).toBeUndefined();
  });

  it('worker reads the credentials from ./.env too', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, '.env'), dotEnv({ APP_ID: '4242', PRIVATE_KEY: privateKey(), WEBHOOK_SECRET: 'unused-by-worker' }));
    const worker = await startUntil(['worker'], { ...UNSET, GOAL_LOOP_DB: join(dir, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(dir, 'ws'), GOAL_LOOP_POLL_MS: '50' }, dir, /goal-loop worker is running/);
    expect((await worker.stop()).code).toBe(0);
  });

  it('with NODE_ENV=production and no credentials, refuses in one line naming what is missing (exit 1)', async () => {
    const dir = await tempDir();
    const r = await runCli(['serve'], { ...UNSET, NODE_ENV: 'production', GOAL_LOOP_DB: join(dir, 'ledger.db') } as unknown as Record<string, string>, dir);
    expect(r.code).toBe(1);
    const lines = r.stderr.split('\n').filter(Boolean);
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^goal-loop: serve refuses to start: .*APP_ID.*PRIVATE_KEY.*PRIVATE_KEY_PATH/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('app.yml, the manifest the setup flow registers', () => {
  it('leaves the webhook URL to Probot and subscribes only to events a manifest may name', async () => {
    const manifest = parse(await import('node:fs/promises').then((fs) => fs.readFile(APP_YML, 'utf8'))) as Record<string, unknown>;
    expect(manifest.hook_attributes, 'a fixed hook URL replaces the one Probot generates').toBeUndefined();
    // GitHub's webhook event names this app handles; `installation` is sent to every app and cannot be subscribed to.
    expect(manifest.default_events).toEqual(['issues', 'issue_comment', 'pull_request', 'pull_request_review', 'push', 'check_run', 'status']);
    // The repository's CI as a verifier reads commit statuses and Actions job logs.
    expect(manifest.default_permissions).toEqual({ contents: 'write', issues: 'write', pull_requests: 'write', checks: 'write', statuses: 'read', actions: 'read', metadata: 'read' });
  });

  it(".env.example names every variable of the README's App table, with no value set", async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    const example = await readFile(fileURLToPath(new URL('../../.env.example', import.meta.url)), 'utf8');
    // The App's rows of the README's one environment table: from APP_ID up to the first row every command reads.
    const table = readme.slice(readme.indexOf('| `APP_ID`'), readme.indexOf('| `GOAL_LOOP_DB`'));
    expect(table).toContain('`LOG_LEVEL`');
    const names = [...table.matchAll(/^\| (.*?) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((v) => v[1]!));
    expect(names).toContain('WEBHOOK_PROXY_URL');
    for (const name of names) expect(example, name).toMatch(new RegExp(`^# ${name}=`, 'm'));
    expect(
      example.split('\n').filter((l) => /^[A-Z_]+=/.test(l)),
      'uncommented settings',
    ).toEqual([]);
  });

  it('outside a folder with app.yml, refuses the setup flow in one line (it would register an app with no permissions or events)', async () => {
    const dir = await tempDir();
    const r = await runCli(['serve'], { ...UNSET, NO_SMEE_SETUP: 'true', PORT: String(await freePort()), GOAL_LOOP_DB: join(dir, 'ledger.db') } as unknown as Record<string, string>, dir);
    expect(r.code).toBe(1);
    const lines = r.stderr.split('\n').filter(Boolean);
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toContain(`./app.yml, which is not in ${dir}`);
    expect(lines[0]).toContain(`cp ${APP_YML} .`);
  });

  it("Probot's setup page offers a manifest whose webhook URL is this server's own", async () => {
    const dir = await tempDir();
    await copyFile(APP_YML, join(dir, 'app.yml'));
    const port = await freePort();
    // NO_SMEE_SETUP: no smee.io channel (network) is made; the URL is then the server's.
    const setup = await startUntil(['serve'], { ...UNSET, NO_SMEE_SETUP: 'true', PORT: String(port), HOST: '127.0.0.1', GOAL_LOOP_DB: join(dir, 'ledger.db') }, dir, /setup flow/);
    try {
      let page: Response | undefined;
      const end = Date.now() + 30_000;
      while (page?.status !== 200) {
        if (Date.now() > end) throw new Error(`no setup page:\n${setup.stderr()}`);
        page = await fetch(`http://127.0.0.1:${port}/probot`).catch(() => undefined);
        if (!page) await new Promise((r) => setTimeout(r, 100));
      }
      const html = await page.text();
      const m = /name="manifest" id="manifest" value='([^']*)'/.exec(html);
      expect(m, html).toBeTruthy();
      const offered = JSON.parse(m![1]!) as { hook_attributes: { url: string }; default_events: string[]; public: boolean };
      expect(offered.hook_attributes.url).toBe(`http://127.0.0.1:${port}/`);
      expect(offered.default_events).not.toContain('installation');
      expect(offered.public).toBe(false);
    } finally {
      await setup.stop();
    }
  });
});
