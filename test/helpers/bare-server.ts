import { join } from 'node:path';
import { type RunningServer, type ServeOptions, startServer } from '../../src/github/server/serve.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { privateKey, SECRET, silent, TestOctokit } from './github-app-harness.js';
import { tempDir } from './temp.js';
import { openTestStore } from './test-store.js';

type Logger = NonNullable<NonNullable<ServeOptions['probotOverrides']>['overrides']>['log'];
type Extra = Omit<Partial<ServeOptions>, 'store' | 'workspaceRoot' | 'probotOverrides'>;

/** A real `serve` on 127.0.0.1 with a fresh store, the test App's key and secret, and no goals to work. */
export async function startBareServer(extra: Extra = {}, log: Logger = silent): Promise<{ server: RunningServer; store: Store }> {
  const root = await tempDir();
  const store = await openTestStore(root);
  const server = await startServer({
    store,
    workspaceRoot: join(root, 'ws'),
    sandboxFor: async () => new ProcessSandbox(),
    env: {},
    port: 0,
    host: '127.0.0.1',
    ...extra,
    probotOverrides: { overrides: { appId: 1, privateKey: privateKey(), secret: SECRET, log, Octokit: TestOctokit } },
  });
  return { server, store };
}
