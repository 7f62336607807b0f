import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { type AppHarness, appHarness, TWO_FILE_GOAL } from '../helpers/github-app-harness.js';
import { issuesLabeled, pushed } from '../helpers/webhook-payloads.js';

const N = 52;
const KEY = { repo: 'octo-org/widgets', goalId: String(N) };
const TWO = TWO_FILE_GOAL;
const ISSUE = { number: N, title: 'Follow main', user: 'alice', body: TWO };

/** A goal at rest with a ready PR (`files`: what the fake GitHub serves from the default branch, the repo config). */
async function completed(files?: Record<string, string>): Promise<{ h: AppHarness; branch: string }> {
  const h = await appHarness({ issues: [ISSUE], ...(files ? { files } : {}) });
  await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));
  expect((await h.ledger.getGoal(KEY))!.state).toBe('LOOP_COMPLETE');
  expect(h.fake.pulls[0]!.draft).toBe(false);
  return { h, branch: h.fake.pulls[0]!.head };
}

/** A person's commit pushed to `branch` of the remote (real git); its sha. */
function commitTo(h: AppHarness, branch: string, path: string, content: string): string {
  const clone = join(h.root, `clone-${Math.random().toString(36).slice(2)}`);
  git(h.root, 'clone', '--quiet', '--branch', branch, h.repo.bare, clone);
  writeFileSync(join(clone, path), content);
  git(clone, 'add', '--all');
  git(clone, '-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', 'commit', '--quiet', '-m', `change ${path}`);
  git(clone, 'push', '--quiet', 'origin', branch);
  return git(clone, 'rev-parse', 'HEAD');
}

const tip = (h: AppHarness, branch: string) => git(h.repo.bare, 'rev-parse', `refs/heads/${branch}`);

describe('the App: a goal’s PR follows its base branch (push webhook)', () => {
  it('a push to main: the goal branch is rebased onto it, both verifications run again, the PR stays ready and says so', async () => {
    const { h, branch } = await completed();
    const onto = commitTo(h, 'main', 'NOTES.md', 'from main\n');
    await h.deliver('push', pushed({ ...h.repoSpec, after: onto }));

    expect(git(h.repo.bare, 'merge-base', '--is-ancestor', onto, branch)).toBe('');
    expect(checkpointCommits(h.repo.bare, branch).map((c) => c.task)).toEqual(['one', 'two']);
    expect((await h.ledger.getGoal(KEY))!.state).toBe('LOOP_COMPLETE');
    const pr = h.fake.pulls[0]!;
    expect(pr.draft).toBe(false);
    const timeline = h.fake.commentsOn(pr.number).filter((c) => c.body.includes('followed the base branch'));
    expect(timeline).toHaveLength(1);
    expect(timeline[0]!.body).toContain(`rebased onto ${onto.slice(0, 7)}: 2 checkpoints replayed, 2 re-verified`);
    const status = h.fake.commentsOn(N).find((c) => c.body.includes(STATUS_MARKER))!;
    expect(status.body).toContain('**Base branch:** rebased onto');
  });

  it('a push to another branch, or one on main while follow_base is off, moves nothing', async () => {
    const { h, branch } = await completed();
    const before = tip(h, branch);
    git(h.repo.bare, 'branch', 'feature', 'main');
    const other = commitTo(h, 'feature', 'NOTES.md', 'elsewhere\n');
    await h.deliver('push', pushed({ ...h.repoSpec, after: other, branch: 'feature' }));
    expect(tip(h, branch)).toBe(before);

    const off = await completed({ '.github/goal-loop.yml': 'follow_base: off\n' });
    const offBefore = tip(off.h, off.branch);
    const onto = commitTo(off.h, 'main', 'NOTES.md', 'from main\n');
    await off.h.deliver('push', pushed({ ...off.h.repoSpec, after: onto }));
    expect(tip(off.h, off.branch)).toBe(offBefore);
    expect(off.h.fake.commentsOn(off.h.fake.pulls[0]!.number).filter((c) => c.body.includes('followed the base branch'))).toEqual([]);
  });
});
