import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The GitHub App's integration suites, and the steering policy's one store-dependent suite (the
 * review hand-off's atomic meta updates), which run once per store. The rest of test/steering/ is
 * pure policy (no store at all): it runs once, in the pure project.
 */
const INTEGRATION = ['test/github/**/*.test.ts', 'test/steering/pending-reviews.test.ts'];
/**
 * Not again on PostgreSQL: the README lifecycle table, whose rows are GitHub semantics that the
 * other suites already run on both stores, the load test, which runs on PostgreSQL whatever the
 * project, and the Octokit write-budget plugin and the service settings, which open no store (the budget's store contract runs on each store in test/ledger).
 */
const STORE_AGNOSTIC = [
  'test/github/lifecycle-table.test.ts',
  'test/github/fake-github-actions.test.ts',
  'test/github/write-load.test.ts',
  'test/github/write-budget-plugin.test.ts',
  'test/github/service-settings.test.ts',
];

/**
 * Pure tests: no child process, server or store (an in-memory port fake is fine), no module state
 * or environment they change; temporary directories only through test/helpers/temp.ts, which
 * removes each when its test ends and registers no hook on import. A worker runs these files one
 * after another in one module graph (isolate: false): about half the time and CPU of a fresh worker
 * per file. They run once: a store-agnostic file in test/github/ is not run again on PostgreSQL.
 * A file listed here that moves simply runs in the isolated projects.
 */
const PURE = [
  'test/goal/**/*.test.ts',
  'test/ports/**/*.test.ts',
  'test/common/**/*.test.ts',
  'test/forge/**/*.test.ts',
  'test/config/**/*.test.ts',
  'test/architecture/**/*.test.ts',
  // Not test/steering/pending-reviews.test.ts: it needs a store and runs on both.
  'test/steering/{decide,report,turn}/**/*.test.ts',
  'test/steering/{commands-parse,readme-status-sample,status-comment,undelivered-notice}.test.ts',
  'test/loop/{controller-fast,memory-ledger,transition,drain-effects}.test.ts',
  'test/ledger/{migrations,sql-statement}.test.ts',
  'test/mcp/limits-policy.test.ts',
  'test/run/compose-goal-run.test.ts',
  'test/github/{git-auth,server/body-cap,decide-queue-report}.test.ts',
  'test/docs/{links,readme-layout,env-table,versions}.test.ts',
  'test/sandbox/{bwrap-args,host-env}.test.ts',
  'test/security/confined-files-links.test.ts',
  'test/workspace/remote-auth.test.ts',
  'test/action/{job-summary,workflow-commands,example-workflow,action-yml,carried-state,progress-lines,identity}.test.ts',
];

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
      { extends: true, test: { name: 'pure', include: PURE, isolate: false } },
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: PURE } },
      { extends: true, test: { name: 'postgres', include: INTEGRATION, exclude: [...STORE_AGNOSTIC, ...PURE], env: { GOAL_LOOP_TEST_STORE: 'postgres' } } },
    ],
  },
});
