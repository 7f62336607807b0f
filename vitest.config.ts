import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The GitHub App's integration suites, and the steering policy's one store-dependent suite (the
 * review hand-off's atomic meta updates), which run once per store. The rest of test/steering/ is
 * pure policy (no store at all): it runs once, in the sqlite project.
 */
const INTEGRATION = ['test/github/**/*.test.ts', 'test/steering/pending-reviews.test.ts'];
/**
 * Not again on PostgreSQL: the README lifecycle table, whose rows are GitHub semantics that the
 * other suites already run on both stores.
 */
const STORE_AGNOSTIC = ['test/github/lifecycle-table.test.ts'];

export default defineConfig({
  test: {
    // Cheap: dist/ and PostgreSQL are made on first need (test/helpers/build.ts, postgres.ts).
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup/dist-users.ts', 'test/setup/isolated-state.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is cores - 1 workers: 1 on 2 cores, where most files wait on child processes,
    // git and servers; 2 workers there halve the suite's time. VITEST_MAX_WORKERS or --maxWorkers win.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'] } },
      { extends: true, test: { name: 'postgres', include: INTEGRATION, exclude: STORE_AGNOSTIC, env: { GOAL_LOOP_TEST_STORE: 'postgres' } } },
    ],
  },
});
