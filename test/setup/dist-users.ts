import { readFileSync } from 'node:fs';
import { beforeAll } from 'vitest';
import { ensureBuilt } from '../helpers/build.js';

// Test files that use the CLI get dist/ built by test/helpers/cli.ts. This covers the others that
// name a built file themselves ('dist/src/...'): they get it built before their first test.
// (The first argument is the fixtures, which vitest requires to be destructured.)
// biome-ignore lint/correctness/noEmptyPattern: vitest requires the fixtures argument destructured
beforeAll(async ({}, suite) => {
  const file = 'filepath' in suite ? suite.filepath : suite.file.filepath;
  if (/\bdist\/src\//.test(readFileSync(file, 'utf8'))) await ensureBuilt();
}, 600_000);
