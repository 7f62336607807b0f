import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../../src/demo/sample-repo.js';
import { startServer } from '../../../src/github/server/serve.js';
import { ProcessSandbox } from '../../../src/sandbox/process-sandbox.js';
import { fakeGitHub } from '../../helpers/fake-github.js';
import { checkpointCommits } from '../../helpers/git.js';
import { goalBlock, INSTALLATION, OWNER, privateKey, REPO, SECRET, silent, TestOctokit } from '../../helpers/github-app-harness.js';
import { tempDir } from '../../helpers/temp.js';
import { openTestStore } from '../../helpers/test-store.js';
import { deliverWebhook, issuesLabeled } from '../../helpers/webhook-payloads.js';

describe('goal-loop serve: the real HTTP server', () => {
  it('answers /health, verifies signatures, and runs a goal from a signed delivery', async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const body = goalBlock(`
objective: Served
tasks:
  - { id: one, title: One, run: "echo 1 > one", verification: "test -f one" }
`);
    const issue = { number: 21, title: 'Served', body, user: 'alice', labels: ['goal'] };
    const fake = fakeGitHub({ owner: OWNER, repo: REPO, installationId: INSTALLATION, collaborators: { alice: 'admin' }, issues: [issue], strictAuth: true });
    const store = await openTestStore(root);
    const server = await startServer({
      store,
      workspaceRoot: join(root, 'ws'),
      sandboxFor: async () => new ProcessSandbox(),
      env: {},
      port: 0,
      host: '127.0.0.1',
      minUpdateIntervalMs: 0,
      probotOverrides: { overrides: { appId: 1, privateKey: privateKey(), secret: SECRET, log: silent, Octokit: TestOctokit } },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const health = await fetch(`${base}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });
      expect((await fetch(`${base}/nope`)).status).toBe(404);

      const payload = issuesLabeled({ owner: OWNER, repo: REPO, installationId: INSTALLATION, cloneUrl: repo.bare, sender: 'alice', issue, label: 'goal' });
      const forged = await deliverWebhook(`${base}/api/github/webhooks`, { event: 'issues', payload, secret: 'wrong-secret' });
      expect(forged.status).toBeGreaterThanOrEqual(400);
      expect(forged.status).toBeLessThan(500);
      await server.runtime.idle();
      expect(fake.requests).toEqual([]);

      const ok = await deliverWebhook(`${base}/api/github/webhooks`, { event: 'issues', payload, secret: SECRET });
      expect(ok.status).toBe(200);
      // The answer comes before the goal's work: the handler only records and enqueues.
      expect(checkpointCommits(repo.bare, 'goal/21-served')).toEqual([]);
      await server.runtime.idle();
      expect(checkpointCommits(repo.bare, 'goal/21-served').map((c) => c.task)).toEqual(['one']);
      expect(fake.violations).toEqual([]);
    } finally {
      await server.close();
      fake.stop();
      await store.close();
    }
    await expect(fetch(`http://127.0.0.1:${server.port}/health`)).rejects.toThrow();
  });
});
