import { describe, expect, it, onTestFinished } from 'vitest';
import { createAppRuntime } from '../../src/github/runtime.js';
import { DEFAULT_WRITE_LIMITS } from '../../src/ports/write-budget.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { fakeGitHub } from '../helpers/fake-github.js';
import { privateKey } from '../helpers/github-app-harness.js';
import { tempDir } from '../helpers/temp.js';
import { openTestStore } from '../helpers/test-store.js';

const owner = 'octo';
const repo = 'demo';
const installationId = 4242;

describe('serve and worker take their writes from the store’s budget', () => {
  it('records an installation’s write in the ledger, where every process sharing it counts it', async () => {
    const fake = fakeGitHub({ owner, repo, installationId, issues: [{ number: 1, title: 'One', body: 'Do it', user: 'alice' }] });
    const root = await tempDir();
    const store = await openTestStore(root);
    onTestFinished(async () => {
      fake.stop();
      await store.close();
    });
    // 3 a minute: normal writes may fill 2 of them (80 %).
    const env = { APP_ID: '1', PRIVATE_KEY: privateKey(), WEBHOOK_SECRET: 'a-secret-long-enough-for-the-check', LOG_LEVEL: 'silent' as const, GOAL_LOOP_GITHUB_WRITES_PER_MINUTE: '3' };
    const { probot, runtime } = await createAppRuntime({ store, workspaceRoot: root, sandboxFor: async () => new ProcessSandbox(), env }, 'webhooks', 'test');
    onTestFinished(() => runtime.close(0));
    const octokit = await probot.auth(installationId);
    await octokit.rest.issues.get({ owner, repo, issue_number: 1 });
    await octokit.rest.issues.createComment({ owner, repo, issue_number: 1, body: 'one' });
    await octokit.rest.issues.createComment({ owner, repo, issue_number: 1, body: 'two' });
    // Another process on the store finds exactly this minute's two writes taken (the read took none).
    const limits = { ...DEFAULT_WRITE_LIMITS, windows: [{ ms: 60_000, max: 3 }] };
    const ask = (installation: string) => store.ledger.tryTakeWrite({ installation, priority: 'urgent', limits });
    expect(await ask(String(installationId))).toEqual({ take: true });
    expect(await ask(String(installationId))).toMatchObject({ take: false });
    expect(await ask('1')).toEqual({ take: true }); // another installation has its own
  });
});
