import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { RepoConfigSchema } from '../../src/config/repo-config.js';
import { configCommands } from '../../src/run/compose-goal-run.js';
import { jail, jailRoot, runIn } from '../helpers/sandbox-jail.js';

// A corporate CA bundle somewhere in the operator's home, where the jail never looks on its own.
const caDir = mkdtempSync(join(homedir(), '.goal-loop-ca-test-'));
const caFile = join(caDir, 'corp-root.pem');
writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nMIIcorp\n-----END CERTIFICATE-----\n', { mode: 0o644 });
afterAll(() => rmSync(caDir, { recursive: true, force: true }));

describe('setup_env: named host variables for setup, and the CA bundle they name', () => {
  it("passes exactly the named variables, never the bot's own credentials, whatever the repo config lists", () => {
    const logged: unknown[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => logged.push(JSON.parse(line)) });
    const config = RepoConfigSchema.parse({
      setup: ['npm ci'],
      setup_env: ['HTTPS_PROXY', 'NODE_EXTRA_CA_CERTS', 'ANTHROPIC_API_KEY', 'GITHUB_TOKEN', 'DATABASE_URL', 'PRIVATE_KEY', 'GOAL_LOOP_DB', 'PATH', 'NOT_SET_ANYWHERE'],
    });
    const host = {
      HTTPS_PROXY: 'http://proxy.corp:3128',
      NODE_EXTRA_CA_CERTS: caFile,
      ANTHROPIC_API_KEY: 'sk-secret',
      GITHUB_TOKEN: 'ghs_secret',
      DATABASE_URL: 'postgres://u:p@db/x',
      PRIVATE_KEY: 'k',
      GOAL_LOOP_DB: '/x',
      PATH: '/evil',
      UNLISTED: 'no',
    };
    const commands = configCommands(config, host, logger);
    expect(commands.setupEnv).toEqual({ HTTPS_PROXY: 'http://proxy.corp:3128', NODE_EXTRA_CA_CERTS: caFile });
    expect(logged).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ refused: ['ANTHROPIC_API_KEY', 'GITHUB_TOKEN', 'DATABASE_URL', 'PRIVATE_KEY', 'GOAL_LOOP_DB', 'PATH'] }),
        expect.objectContaining({ missing: ['NOT_SET_ANYWHERE'] }),
      ]),
    );
    expect(() => RepoConfigSchema.parse({ setup_env: ['lower-case; rm -rf /'] })).toThrow(/environment variable name/);
  });

  it('in the jail, a setup command sees the passed variables and can read the CA bundle one names; a command without them sees neither', async () => {
    const { ws } = await jailRoot();
    const sandbox = jail();
    const probe = `echo "proxy=$HTTPS_PROXY"; echo "ca=$NODE_EXTRA_CA_CERTS"; cat "${caFile}" 2>&1 | head -2`;
    const setup = await runIn(sandbox, ws, probe, { passEnv: { HTTPS_PROXY: 'http://proxy.corp:3128', NODE_EXTRA_CA_CERTS: caFile } });
    expect(setup.exitCode, setup.output).toBe(0);
    expect(setup.output).toContain('proxy=http://proxy.corp:3128');
    expect(setup.output).toContain(`ca=${caFile}`);
    expect(setup.output).toContain('MIIcorp');
    // Read-only: the bundle is the operator's.
    const write = await runIn(sandbox, ws, `echo x >> "${caFile}"`, { passEnv: { NODE_EXTRA_CA_CERTS: caFile } });
    expect(write.exitCode).not.toBe(0);

    const task = await runIn(sandbox, ws, probe);
    expect(task.output).toContain('proxy=\n');
    expect(task.output).not.toContain('MIIcorp');
  });
});
