import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { stopTestPostgres } from './helpers/postgres.js';

/**
 * Nothing expensive happens here, so one test file runs in a second or two. What some tests need
 * is made on first need, once per run, by whichever worker needs it first:
 * - dist/ (tests that run the built `goal-loop`): test/helpers/build.ts, skipped when dist/ is
 *   already built from the current sources;
 * - a PostgreSQL server (GOAL_LOOP_TEST_DATABASE_URL, else a throwaway cluster) with a migrated
 *   template database: test/helpers/postgres.ts.
 * This gives the workers a directory to share; at the end the cluster is removed (or the run's
 * databases dropped). Vitest calls this for each project in the run: they share one directory.
 */
interface Run {
  dir: string;
  users: number;
}
const RUN = Symbol.for('goal-loop.test-run');
const shared = globalThis as { [RUN]?: Run };

export default function setup(project: TestProject): () => Promise<void> {
  shared[RUN] ??= { dir: mkdtempSync(join(tmpdir(), 'goal-loop-test-run-')), users: 0 };
  const run = shared[RUN];
  run.users++;
  project.provide('testRunDir', run.dir);
  return async () => {
    if (--run.users > 0) return;
    delete shared[RUN];
    try {
      await stopTestPostgres(run.dir);
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  };
}
