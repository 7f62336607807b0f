import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, onTestFinished, TestRunner } from 'vitest';

/**
 * A fresh temporary directory, removed when the test that made it finishes (after its afterEach
 * hooks), or, made in a describe block, after that block. No hook is registered on import, so a file
 * using this can run in the `pure` project (vitest.config.ts). Not from beforeAll: there vitest has no
 * running test and no collecting suite to attach the removal to (use mkdtemp and your own afterAll).
 */
export async function tempDir(prefix = 'goal-loop-test-'): Promise<string> {
  // Attached before the first await: a describe block's collection may end at it.
  let dir: string | undefined;
  whenDone(async () => {
    if (dir) await remove(dir);
  });
  dir = await mkdtemp(join(tmpdir(), prefix));
  return dir;
}

function whenDone(cleanup: () => Promise<void>): void {
  if (TestRunner.getCurrentTest()) onTestFinished(cleanup);
  else if (TestRunner.getCurrentSuite().suite) afterAll(cleanup);
  else throw new Error('tempDir() outside a test or describe block (in beforeAll?): nothing would remove the directory');
}

// Retried: a git process a killed worker started may still be writing for a moment.
function remove(dir: string): Promise<void> {
  return rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
}
