import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RepoConfigSchema } from '../../src/config/repo-config.js';
import { configCommands } from '../../src/run/compose-goal-run.js';
import { hostEnv } from '../../src/sandbox/host-env.js';

// `setup_env` and `mcp_servers[].env` come from the repository (untrusted): a name listed there
// must never hand the jail a credential of the bot or of the host it runs on.
const BOT_AND_SECRETS = {
  // Probot's manifest flow writes these into .env, which serve loads into process.env.
  GITHUB_CLIENT_SECRET: 'cs_123',
  GITHUB_CLIENT_ID: 'Iv1.abc',
  WEBHOOK_PROXY_URL: 'https://smee.io/abc',
  WEBHOOK_SECRET: 'whsec',
  GH_ENTERPRISE_TOKEN: 'ghe',
  PGPASSWORD: 'pw',
  PGHOST: 'db.internal',
  DATABASE_URL: 'postgres://u:p@db/x',
  ANTHROPIC_MODEL: 'claude',
  APP_ID: '1',
  PRIVATE_KEY_PATH: '/keys/app.pem',
  GOAL_LOOP_DB: '/x',
  // Cloud and registry credentials of the host.
  AWS_ACCESS_KEY_ID: 'AKIA',
  AWS_SECRET_ACCESS_KEY: 'aws-secret',
  AWS_SESSION_TOKEN: 'aws-token',
  AZURE_CLIENT_SECRET: 'az',
  GOOGLE_APPLICATION_CREDENTIALS: '/keys/gcp.json',
  NPM_TOKEN: 'npm_abc',
  NPM_CONFIG__AUTH: 'dXNlcjpwYXNz',
  SSH_AUTH_SOCK: '/run/ssh-agent',
  REDIS_PASSWORD: 'r',
  DEPLOY_PASSWD: 'd',
  SIGNING_PASSPHRASE: 's',
};

// What the README documents for setup_env (proxies, registries, CA bundles) and an MCP server's own setting.
const DOCUMENTED = {
  HTTPS_PROXY: 'http://proxy.corp:3128',
  HTTP_PROXY: 'http://proxy.corp:3128',
  NO_PROXY: 'localhost,.corp',
  NPM_CONFIG_REGISTRY: 'https://npm.corp/',
  PIP_INDEX_URL: 'https://pypi.corp/simple',
  NODE_EXTRA_CA_CERTS: '/etc/corp/ca.pem',
  SSL_CERT_FILE: '/etc/corp/ca.pem',
  REQUESTS_CA_BUNDLE: '/etc/corp/ca.pem',
  PIP_CERT: '/etc/corp/ca.pem',
  CURL_CA_BUNDLE: '/etc/corp/ca.pem',
  GIT_SSL_CAINFO: '/etc/corp/ca.pem',
  GIT_AUTHOR_NAME: 'Setup Bot',
  DOCS_INDEX: '/srv/docs',
};

describe("hostEnv refuses the bot's credentials and anything that looks like a secret", () => {
  it('attack: bot credentials Probot and the host keep in the environment never pass, whatever the config lists', () => {
    const names = Object.keys(BOT_AND_SECRETS);
    const got = hostEnv(names, { ...BOT_AND_SECRETS, ...DOCUMENTED });
    expect(got.env).toEqual({});
    expect(got.refused).toEqual(names);
    // Each refusal says why.
    for (const name of names) expect(got.why[name], name).toMatch(/bot's own|looks like a secret/);
    expect(got.why.GITHUB_CLIENT_SECRET).toMatch(/bot's own/);
    expect(got.why.NPM_TOKEN).toMatch(/looks like a secret/);
  });

  it('passes the proxy, registry and CA bundle variables the README documents, and says what the jail sets itself', () => {
    const got = hostEnv([...Object.keys(DOCUMENTED), 'PATH', 'HOME', 'UNSET_HERE'], { ...DOCUMENTED, PATH: '/evil', HOME: '/root' });
    expect(got.env).toEqual(DOCUMENTED);
    expect(got.refused).toEqual(['PATH', 'HOME']);
    expect(got.why.PATH).toMatch(/the jail sets/);
    expect(got.missing).toEqual(['UNSET_HERE']);
  });

  it('the setup warning names each refused variable and why, and the passed ones still reach setup', () => {
    const logged: Record<string, unknown>[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => logged.push(JSON.parse(line)) });
    const config = RepoConfigSchema.parse({ setup: ['npm ci'], setup_env: ['HTTPS_PROXY', 'GITHUB_CLIENT_SECRET', 'PGPASSWORD', 'NPM_TOKEN'] });
    const commands = configCommands(config, { HTTPS_PROXY: DOCUMENTED.HTTPS_PROXY, GITHUB_CLIENT_SECRET: 'cs_123', PGPASSWORD: 'pw', NPM_TOKEN: 'npm_abc' }, logger);
    expect(commands.setupEnv).toEqual({ HTTPS_PROXY: DOCUMENTED.HTTPS_PROXY });
    const warning = logged.find((l) => Array.isArray(l.refused));
    expect(warning).toMatchObject({
      level: 40,
      refused: ['GITHUB_CLIENT_SECRET', 'PGPASSWORD', 'NPM_TOKEN'],
      why: { GITHUB_CLIENT_SECRET: expect.stringMatching(/bot's own/), PGPASSWORD: expect.stringMatching(/bot's own/), NPM_TOKEN: expect.stringMatching(/looks like a secret/) },
    });
    expect(JSON.stringify(logged)).not.toMatch(/cs_123|npm_abc|"pw"/);
  });
});
