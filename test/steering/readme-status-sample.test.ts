import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/goal/limits.js';
import type { GoalSnapshot } from '../../src/goal/result.js';
import { renderStatus, STATUS_MARKER } from '../../src/steering/report/status-comment.js';

// The README shows the status comment the bot posts, as GitHub renders it. It is the renderer's
// output for this snapshot, quoted line by line (`> `), so the README cannot drift from the code:
// when the renderer changes, paste this test's expected text (quoted) between the markers.
const START = '<!-- status-sample:start -->';
const END = '<!-- status-sample:end -->';

const REPO_URL = 'https://github.com/octo-org/widgets';

const snapshot: GoalSnapshot = {
  goalId: '42',
  objective: 'Rate-limit the public API',
  repo: 'octo-org/widgets',
  branch: 'goal/42-rate-limit-the-public-api',
  state: 'EXECUTING',
  currentTaskId: 'task-03',
  tasks: [
    {
      id: 'task-01',
      title: 'Add a token-bucket limiter',
      dependencies: [],
      status: 'done',
      attempts: 1,
      checkpointSha: '3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345',
    },
    {
      id: 'task-02',
      title: 'Apply it to the /api routes',
      dependencies: ['task-01'],
      status: 'done',
      attempts: 1,
      checkpointSha: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678',
    },
    {
      id: 'task-03',
      title: 'Answer 429 with Retry-After',
      dependencies: ['task-02'],
      status: 'running',
      attempts: 2,
      lastError: 'expected 429, got 200',
    },
  ],
  iterations: 4,
  tokens: { input: 38_210, output: 6_904, cache_read: 91_500, cache_write: 12_040 },
  costUsd: 0.87,
  limits: { ...DEFAULT_LIMITS },
  startedAt: Date.UTC(2026, 0, 5, 9, 30),
};

/** The README's sample, unquoted: the lines between the markers without their leading `> `. */
function readmeSample(readme: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  expect(start, `README has no ${START}`).toBeGreaterThanOrEqual(0);
  expect(end, `README has no ${END} after ${START}`).toBeGreaterThan(start);
  const quoted = readme
    .slice(start + START.length, end)
    .trim()
    .split('\n');
  for (const line of quoted) expect(line, 'every line of the sample is quoted').toMatch(/^>( |$)/);
  return quoted.map((line) => line.replace(/^> ?/, '')).join('\n');
}

describe("the README's status comment sample", () => {
  it('is exactly what renderStatus posts for a goal in progress', () => {
    const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    const proofs = new Map([
      ['task-01', { evidence: 'red->green' as const, greenBefore: false }],
      ['task-02', { evidence: 'red->green' as const, greenBefore: false }],
    ]);
    const rendered = renderStatus(snapshot, { repoUrl: REPO_URL, pullRequest: { number: 43, url: `${REPO_URL}/pull/43` } }, [], undefined, proofs);
    expect(rendered.startsWith(STATUS_MARKER)).toBe(true);
    expect(readmeSample(readme)).toBe(rendered);
  });
});
