import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropicModel } from '../../src/agent/anthropic-model.js';
import { ModelError, type ModelRequest } from '../../src/agent/model.js';
import { silentLogger } from '../helpers/goal-harness.js';
import { tempDir } from '../helpers/temp.js';

// One request through Anthropic's Bedrock and Vertex SDKs, against a local server that stands in
// for Bedrock's runtime, Vertex AI and Google's token exchange (STS): fake credentials, no network.

interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

interface Answer {
  status: number;
  body: unknown;
}

const MESSAGE = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [{ type: 'text', text: 'hello from the cloud' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 3, output_tokens: 2 },
};

const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const GOOGLE_TOKEN = 'ya29.fake-access-token';

let server: Server;
let url: string;
const seen: Seen[] = [];
let answer: Answer = { status: 200, body: MESSAGE };

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '';
    if (path === '/sts/token') {
      // Google's token exchange, as an external account (workload identity federation) uses it.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: GOOGLE_TOKEN, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600 }));
      return;
    }
    seen.push({ method: req.method ?? '', path, headers: req.headers, body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {} });
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const request: ModelRequest = {
  system: [{ type: 'text', text: 'sys' }],
  tools: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  maxTokens: 100,
};

function fresh(reply: Answer = { status: 200, body: MESSAGE }): void {
  seen.length = 0;
  answer = reply;
}

describe('Claude on Amazon Bedrock', () => {
  const env = () => ({
    GOAL_LOOP_PROVIDER: 'bedrock',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: AWS_SECRET,
    AWS_SESSION_TOKEN: 'fake-session-token',
    ANTHROPIC_BEDROCK_BASE_URL: url,
  });
  const MODEL = 'anthropic.claude-sonnet-4-5-20250929-v1:0';

  it("signs the request with SigV4 and sends it to the model's invoke path, the model out of the body", async () => {
    fresh();
    const model = createAnthropicModel({ env: env(), model: MODEL, logger: silentLogger, timeoutMs: 20_000 });
    const res = await model.complete(request);
    expect(res.content).toEqual([{ type: 'text', text: 'hello from the cloud' }]);
    expect(seen).toHaveLength(1);
    const [call] = seen;
    expect(call!.method).toBe('POST');
    expect(decodeURIComponent(call!.path)).toBe(`/model/${MODEL}/invoke`);
    expect(call!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}$/);
    expect(call!.headers['x-amz-security-token']).toBe('fake-session-token');
    expect(call!.headers['x-api-key']).toBeUndefined();
    // Bedrock takes the API version from the body, not a header.
    expect(call!.body).toMatchObject({ anthropic_version: expect.any(String), max_tokens: 100 });
    expect(call!.headers['anthropic-version']).toBeUndefined();
    expect(call!.body.model).toBeUndefined();
  });

  it('a model id Bedrock does not serve: an error that says which setting to change, no retry, no credential in it', async () => {
    fresh({ status: 400, body: { message: 'The provided model identifier is invalid.' } });
    const model = createAnthropicModel({ env: env(), model: 'claude-sonnet-4-5', logger: silentLogger, retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 } });
    const err = await model.complete(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    const failure = err as ModelError;
    expect(failure.status).toBe(400);
    expect(failure.details.retryable).toBe(false);
    expect(failure.message).toMatch(/The provided model identifier is invalid/);
    expect(failure.message).toMatch(/model "claude-sonnet-4-5" on GOAL_LOOP_PROVIDER=bedrock: is the id Bedrock's, e\.g\. anthropic\.claude-/);
    expect(failure.message).toMatch(/GOAL_LOOP_MODEL or the config's `model`/);
    expect(failure.message).not.toContain(AWS_SECRET);
    expect(failure.message).not.toContain('fake-session-token');
    expect(seen).toHaveLength(1);
  });
});

describe('Claude on Google Vertex AI', () => {
  const MODEL = 'claude-sonnet-4-5@20250929';
  const env = () => ({ GOAL_LOOP_PROVIDER: 'vertex', ANTHROPIC_VERTEX_PROJECT_ID: 'my-project', CLOUD_ML_REGION: 'us-east5', ANTHROPIC_VERTEX_BASE_URL: `${url}/v1` });
  // Google's library reads its credentials from process.env only. google-github-actions/auth sets
  // both: the credentials file, and the project (without it, an external account's project would
  // be looked up at Cloud Resource Manager).
  const GOOGLE_ENV = ['GOOGLE_APPLICATION_CREDENTIALS', 'GOOGLE_CLOUD_PROJECT'] as const;
  const before: Partial<Record<string, string>> = {};

  beforeAll(() => {
    for (const name of GOOGLE_ENV) before[name] = process.env[name];
    process.env.GOOGLE_CLOUD_PROJECT = 'my-project';
  });
  afterAll(() => {
    for (const name of GOOGLE_ENV) {
      if (before[name] === undefined) delete process.env[name];
      else process.env[name] = before[name];
    }
  });

  /** Google's Application Default Credentials as google-github-actions/auth leaves them for workload identity federation. */
  async function federatedCredentials(): Promise<string> {
    const dir = await tempDir('goal-loop-vertex-');
    const oidc = join(dir, 'oidc-token');
    await writeFile(oidc, 'fake-github-oidc-jwt');
    const file = join(dir, 'gha-creds.json');
    await writeFile(
      file,
      JSON.stringify({
        type: 'external_account',
        audience: '//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/github/providers/goal-loop',
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: `${url}/sts/token`,
        credential_source: { file: oidc },
      }),
    );
    return file;
  }

  it("sends the request with Google's bearer token to the model's rawPredict path in the project and region", async () => {
    fresh();
    process.env.GOOGLE_APPLICATION_CREDENTIALS = await federatedCredentials();
    const model = createAnthropicModel({ env: env(), model: MODEL, logger: silentLogger, timeoutMs: 20_000 });
    const res = await model.complete(request);
    expect(res.content).toEqual([{ type: 'text', text: 'hello from the cloud' }]);
    expect(seen).toHaveLength(1);
    const [call] = seen;
    expect(call!.method).toBe('POST');
    expect(decodeURIComponent(call!.path)).toBe(`/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/${MODEL}:rawPredict`);
    expect(call!.headers.authorization).toBe(`Bearer ${GOOGLE_TOKEN}`);
    expect(call!.headers['x-api-key']).toBeUndefined();
    expect(call!.body).toMatchObject({ anthropic_version: expect.any(String), max_tokens: 100 });
    expect(call!.headers['anthropic-version']).toBeUndefined();
    expect(call!.body.model).toBeUndefined();
  });

  it("a model id Vertex does not serve: the error names Vertex's ids and the setting", async () => {
    fresh({ status: 404, body: { error: { code: 404, message: 'Publisher Model `claude-x` not found.', status: 'NOT_FOUND' } } });
    process.env.GOOGLE_APPLICATION_CREDENTIALS = await federatedCredentials();
    const model = createAnthropicModel({ env: env(), model: 'claude-x', logger: silentLogger, retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 } });
    const err = (await model.complete(request).catch((e: unknown) => e)) as ModelError;
    expect(err).toBeInstanceOf(ModelError);
    expect(err.status).toBe(404);
    expect(err.message).toMatch(/not found/);
    expect(err.message).toMatch(/model "claude-x" on GOAL_LOOP_PROVIDER=vertex: is the id Vertex's, e\.g\. claude-sonnet-4-5@/);
    expect(err.message).not.toContain(GOOGLE_TOKEN);
    expect(seen).toHaveLength(1);
  });

  it('no Google credentials: a setup error on the request, not a crash of the process', async () => {
    fresh();
    const dir = await tempDir('goal-loop-vertex-');
    process.env.GOOGLE_APPLICATION_CREDENTIALS = join(dir, 'missing.json');
    const model = createAnthropicModel({ env: env(), model: MODEL, logger: silentLogger });
    const err = (await model.complete(request).catch((e: unknown) => e)) as ModelError;
    expect(err).toBeInstanceOf(ModelError);
    expect(err.details.retryable).toBe(false);
    expect(err.message).toMatch(/^cannot set up the vertex client: GOAL_LOOP_PROVIDER=vertex found no Google credentials \(Application Default Credentials/);
    expect(seen).toHaveLength(0);
  });
});
