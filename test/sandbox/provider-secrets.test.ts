import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostEnv } from '../../src/sandbox/host-env.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { jail, jailRoot, runIn } from '../helpers/sandbox-jail.js';

// The model providers' settings and credentials (Anthropic, Bedrock through the AWS chain, Vertex
// through Google's ADC) live in the bot's environment: none of them may reach a sandboxed command,
// whether the bot runs it, the caller hands them over, or the repository's config asks for them.
const SECRET = `fake-provider-secret-${randomBytes(8).toString('hex')}`;
const PROVIDER_ENV: Record<string, string> = {
  AWS_REGION: `us-east-1-${SECRET}`,
  AWS_ACCESS_KEY_ID: `AKID${SECRET}`,
  AWS_SECRET_ACCESS_KEY: SECRET,
  AWS_SESSION_TOKEN: SECRET,
  AWS_BEARER_TOKEN_BEDROCK: SECRET,
  AWS_WEB_IDENTITY_TOKEN_FILE: `/tmp/${SECRET}`,
  AWS_CONTAINER_CREDENTIALS_FULL_URI: `http://169.254.170.2/${SECRET}`,
  ANTHROPIC_API_KEY: SECRET,
  ANTHROPIC_BEDROCK_BASE_URL: `https://${SECRET}.example`,
  ANTHROPIC_VERTEX_BASE_URL: `https://${SECRET}.example`,
  ANTHROPIC_VERTEX_PROJECT_ID: SECRET,
  CLOUD_ML_REGION: `us-east5-${SECRET}`,
  GOOGLE_APPLICATION_CREDENTIALS: `/tmp/gha-creds-${SECRET}.json`,
  CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE: `/tmp/gha-creds-${SECRET}.json`,
};
const saved: Record<string, string | undefined> = {};

beforeAll(() => {
  for (const [name, value] of Object.entries(PROVIDER_ENV)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
});

afterAll(() => {
  for (const name of Object.keys(PROVIDER_ENV)) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

describe("the model provider's settings never reach a sandboxed command", () => {
  it('neither the jail nor the unjailed sandbox gets them, from the bot or from the caller', async () => {
    const { ws } = await jailRoot();
    for (const sandbox of [jail(), new ProcessSandbox()]) {
      const result = await runIn(sandbox, ws, 'env', { env: { ...PROVIDER_ENV, GOAL_TASK_ID: 't1' } });
      expect(result.exitCode).toBe(0);
      expect(result.output).toContain('GOAL_TASK_ID=t1'); // the caller's GOAL_* do arrive: the probe works
      expect(result.output).not.toContain(SECRET);
      for (const name of Object.keys(PROVIDER_ENV)) expect(result.output).not.toMatch(new RegExp(`^${name}=`, 'm'));
    }
  });

  it("the repository's setup_env or an MCP server's env cannot ask for the credentials or the provider's settings", () => {
    const credentials = Object.keys(PROVIDER_ENV).filter((name) => name !== 'AWS_REGION' && name !== 'CLOUD_ML_REGION');
    const { env, refused } = hostEnv(credentials, PROVIDER_ENV);
    expect(env).toEqual({});
    expect(refused).toEqual(credentials);
  });
});
