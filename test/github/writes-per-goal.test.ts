import { describe, expect, it } from 'vitest';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import type { RecordedRequest } from '../helpers/fake-github.js';
import { checkpointCommits } from '../helpers/git.js';
import { appHarness, goalBlock } from '../helpers/github-app-harness.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';

const THREE = goalBlock(`
objective: Three steps
tasks:
  - { id: s1, title: Step one, run: "echo 1 > s1", verification: "test -f s1" }
  - { id: s2, title: Step two, run: "echo 2 > s2", verification: "test -f s2", dependencies: [s1] }
  - { id: s3, title: Step three, run: "echo 3 > s3", verification: "test -f s3", dependencies: [s2] }
`);
const ISSUE = { number: 11, title: 'Three steps', body: THREE, user: 'alice', labels: ['goal', 'bug'] };
const BRANCH = 'goal/11-three-steps';

/** A write as GitHub's guidance counts them: any request but a read, GraphQL mutations included; token exchanges are auth, not content. */
function isWrite(r: RecordedRequest): boolean {
  if (/^\/app\/installations\/[^/]+\/access_tokens$/.test(r.pathname)) return false;
  if (r.pathname === '/graphql') return /^\s*mutation\b/.test(String((r.body as { query?: string } | undefined)?.query ?? ''));
  return r.method !== 'GET';
}

/** Writes by kind, e.g. `POST /repos/{owner}/{repo}/issues/{issue_number}/comments`. */
function writesByKind(requests: readonly RecordedRequest[]): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const r of requests.filter(isWrite)) {
    const kind = `${r.method} ${r.template ?? r.pathname}`;
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  return kinds;
}

describe('GitHub App: writes per goal', () => {
  it('takes a 3-task goal from label to ready PR in at most 12 writes, with one status comment and one check run per head', async () => {
    const h = await appHarness({ issues: [ISSUE] });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));

    const kinds0 = writesByKind(h.fake.requests);
    expect.soft(Object.values(kinds0).reduce((a, b) => a + b, 0), JSON.stringify(kinds0, null, 2)).toBeLessThanOrEqual(12);
    expect(checkpointCommits(h.repo.bare, BRANCH)).toHaveLength(3);
    expect(h.fake.pulls[0]).toMatchObject({ draft: false });
    expect(h.fake.commentsOn(11).filter((c) => c.body.includes(STATUS_MARKER))).toHaveLength(1);
    expect(h.fake.labels(11).sort()).toEqual(['bug', 'goal', 'goal:review']);
    expect(h.fake.checkRuns.filter((c) => c.status !== 'completed').map((c) => c.headSha)).toEqual([]);

    const kinds = writesByKind(h.fake.requests);
    const total = Object.values(kinds).reduce((a, b) => a + b, 0);
    expect(total, JSON.stringify(kinds, null, 2)).toBeLessThanOrEqual(12);
  });
});
