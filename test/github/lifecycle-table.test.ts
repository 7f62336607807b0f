import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ESCALATION_MARKER, STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import type { RecordedRequest } from '../helpers/fake-github.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { type AppHarness, appHarness, goalBlock, TWO_FILE_GOAL } from '../helpers/github-app-harness.js';
import { issueCommentCreated, issuesClosed, issuesLabeled, issuesUnlabeled, pullRequestClosed, pullRequestReviewSubmitted } from '../helpers/webhook-payloads.js';

/**
 * The README's lifecycle table (event → state → label → comment) is the contract: every row has
 * a test here, and each test checks the states and labels its row names, read from the README.
 */
interface Row {
  event: string;
  states: string[];
  /** The State cell says the state is kept: no transition, the goal stays where it was. */
  kept: boolean;
  labels: string[];
}

function readmeRows(): Row[] {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const start = readme.indexOf('<!-- lifecycle:start -->');
  const end = readme.indexOf('<!-- lifecycle:end -->');
  if (start < 0 || end < start) throw new Error('README has no lifecycle table between its markers');
  const lines = readme
    .slice(start, end)
    .split('\n')
    .filter((l) => l.startsWith('|'));
  const ticked = (cell: string, pattern: RegExp) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((t) => pattern.test(t));
  return lines.slice(2).map((line) => {
    const cells = line
      .split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.length !== 4) throw new Error(`lifecycle row without 4 cells: ${line}`);
    return { event: cells[0]!, states: ticked(cells[1]!, /^[A-Z_]+$/), kept: /\bkept\b/.test(cells[1]!), labels: ticked(cells[2]!, /^goal:[a-z-]+$/) };
  });
}

const ROWS = readmeRows();
const row = (prefix: string): Row => {
  const hits = ROWS.filter((r) => r.event.startsWith(prefix));
  if (hits.length !== 1) throw new Error(`${hits.length} README lifecycle rows start with "${prefix}"`);
  return hits[0]!;
};

const TWO = TWO_FILE_GOAL;
const BROKEN = goalBlock(`
objective: Needs a human
tasks:
  - { id: broken, title: Broken, run: "true", verification: "echo 'no fix.txt yet'; test -f fix.txt", max_retries: 1 }
  - { id: after, title: After, run: "echo ok > after.txt", verification: "test -f after.txt" }
`);
const RISKY = goalBlock(`
objective: Risky work
tasks:
  - { id: safe, title: Safe, run: "echo 1 > safe.txt", verification: "test -f safe.txt" }
  - { id: drop-table, title: Drop a table, run: "echo 2 > drop.txt", verification: "test -f drop.txt", requires_approval: true, dependencies: [safe] }
`);
const LIMITED = goalBlock(`
objective: Too much for one iteration
limits: { max_iterations: 1 }
tasks:
  - { id: one, title: One, run: "echo 1 > one.txt", verification: "test -f one.txt" }
  - { id: two, title: Two, run: "echo 2 > two.txt", verification: "test -f two.txt", dependencies: [one] }
`);

const N = 21;
const KEY = { repo: 'octo-org/widgets', goalId: String(N) };

interface Scene {
  h: AppHarness;
  issue: { number: number; title: string; body: string; user: string; assignees?: string[] };
  branch: string;
}

async function scene(body: string, opts: Parameters<typeof appHarness>[0] = {}, title = 'Lifecycle'): Promise<Scene> {
  const issue = { number: N, title, body, user: 'maya', assignees: ['alice'] };
  const h = await appHarness({ issues: [issue], ...opts });
  return { h, issue, branch: `goal/${N}-${title.toLowerCase().replace(/\s+/g, '-')}` };
}

/** What the goal went through from a mark on: its state transitions and the labels added. */
async function mark(s: Scene): Promise<() => Promise<{ states: string[]; labels: string[] }>> {
  const transitions = async () => ((await s.h.ledger.getGoal(KEY)) ? (await s.h.ledger.listEvents(KEY)).map((e) => e.to) : []);
  const events = (await transitions()).length;
  const requests = s.h.fake.requests.length;
  return async () => ({
    states: (await transitions()).slice(events),
    labels: s.h.fake.requests
      .slice(requests)
      .filter((r) => r.status < 300)
      .flatMap((r) => labelsAdded(s, r))
      .filter((l) => l.startsWith('goal:')),
  });
}

/** The labels a request added to the issue: by name (REST), or by node id (GraphQL `addLabelsToLabelable`, the issue's `$issue`). */
function labelsAdded(s: Scene, r: RecordedRequest): string[] {
  if (r.method === 'POST' && r.pathname.endsWith(`/issues/${N}/labels`)) return (r.body as { labels: string[] }).labels;
  const gql = r.body as { query?: string; variables?: { issue?: string; add?: string[] } } | undefined;
  if (r.pathname !== '/graphql' || !/\baddLabelsToLabelable\b/.test(gql?.query ?? '') || gql?.variables?.issue !== s.h.fake.issue(N).nodeId) return [];
  const names = new Map([...s.h.fake.repoLabels.values()].map((l) => [l.nodeId, l.name]));
  return (gql.variables.add ?? []).map((id) => names.get(id) ?? id);
}

/** The row's states and labels happened after the mark, in the row's order. */
async function expectRow(r: Row, since: Awaited<ReturnType<typeof mark>>, s?: Scene): Promise<void> {
  const seen = await since();
  if (r.kept) {
    expect(seen.states, 'no transition').toEqual([]);
    expect(s && (await state(s))).toBe(r.states[0]);
  } else expect(inOrder(seen.states, r.states), `states ${seen.states.join(' → ')} include ${r.states.join(', ')}`).toBe(true);
  expect(inOrder(seen.labels, r.labels), `labels ${seen.labels.join(', ')} include ${r.labels.join(', ')}`).toBe(true);
}

function inOrder(seen: string[], wanted: string[]): boolean {
  let i = 0;
  for (const s of seen) if (s === wanted[i]) i += 1;
  return i === wanted.length;
}

const label = (s: Scene, name = 'goal', sender = 'alice') => s.h.deliver('issues', issuesLabeled({ ...s.h.repoSpec, sender, issue: s.issue, label: name }));
async function say(s: Scene, body: string, user = 'alice'): Promise<number> {
  const c = s.h.fake.addComment(N, body, user);
  await s.h.deliver('issue_comment', issueCommentCreated({ ...s.h.repoSpec, sender: user, issue: s.issue, comment: { id: c.id, body, user } }));
  return c.id;
}
const state = async (s: Scene) => (await s.h.ledger.getGoal(KEY))?.state;
const statusBody = (s: Scene) => s.h.fake.commentsOn(N).find((c) => c.body.includes(STATUS_MARKER))?.body ?? '';
const goalLabels = (s: Scene) => s.h.fake.labels(N).filter((l) => l.startsWith('goal:'));
const reactions = (s: Scene, id: number) => s.h.fake.reactions.filter((r) => r.subjectId === id).map((r) => r.content);
const botComments = (s: Scene) =>
  s.h.fake
    .commentsOn(N)
    .filter((c) => c.user.endsWith('[bot]'))
    .map((c) => c.body);
const merge = (s: Scene, pr: number) => s.h.deliver('pull_request', pullRequestClosed({ ...s.h.repoSpec, pull: { number: pr, head: s.branch }, merged: true }));
const closeIssue = (s: Scene) => s.h.deliver('issues', issuesClosed({ ...s.h.repoSpec, issue: s.issue }));

const TESTS: [prefix: string, test: () => Promise<void>][] = [
  [
    'The `goal` label is added',
    async () => {
      const s = await scene(TWO);
      const since = await mark(s);
      await label(s);
      await expectRow(row('The `goal` label is added'), since);
      expect(s.h.fake.commentsOn(N).filter((c) => c.body.includes(STATUS_MARKER))).toHaveLength(1);
      // The status comment came first, before any task ran.
      const first = s.h.fake.calls('POST', `/repos/octo-org/widgets/issues/${N}/comments`)[0]!;
      expect((first.body as { body: string }).body).toContain('**State:** `INITIALIZING`');
    },
  ],
  [
    'The same, by someone without write access',
    async () => {
      const s = await scene(TWO);
      const since = await mark(s);
      await label(s, 'goal', 'rob');
      const r = row('The same, by someone without write access');
      expect(r.states).toEqual([]);
      expect(r.labels).toEqual([]);
      await expectRow(r, since);
      expect(await state(s)).toBeUndefined();
      expect(goalLabels(s)).toEqual([]);
      expect(botComments(s)).toEqual(['@rob only people with write access to this repository can start or steer a goal.']);
    },
  ],
  [
    'The issue has no `goal` block',
    async () => {
      const s = await scene('Please make it faster.');
      const since = await mark(s);
      await label(s);
      await expectRow(row('The issue has no `goal` block'), since);
      expect(await state(s)).toBe('STOPPED');
      expect(goalLabels(s)).toEqual(['goal:stopped']);
      expect(botComments(s).some((c) => c.includes('```goal') && c.includes('verification:'))).toBe(true);
    },
  ],
  [
    '`.github/goal-loop.yml` on the default branch is invalid',
    async () => {
      const s = await scene(TWO, { files: { '.github/goal-loop.yml': 'max_retries: zero\n' } });
      await label(s);
      const r = row('`.github/goal-loop.yml` on the default branch is invalid');
      expect([r.states, r.labels]).toEqual([[], []]);
      expect(await state(s)).toBeUndefined();
      expect(goalLabels(s)).toEqual([]);
      expect(botComments(s)).toHaveLength(1);
      expect(botComments(s)[0]).toMatch(/goal-loop\.yml` is invalid[\s\S]*- .*max_retries/);
    },
  ],
  [
    'The plan waits for approval',
    async () => {
      const s = await scene(TWO, { files: { '.github/goal-loop.yml': 'require_plan_approval: true\n' } });
      const since = await mark(s);
      await label(s);
      await expectRow(row('The plan waits for approval'), since);
      expect(await state(s)).toBe('AWAITING_APPROVAL');
      expect(goalLabels(s)).toEqual(['goal:awaiting-approval']);
      expect(botComments(s).some((c) => c.includes('`/goal approve`'))).toBe(true);
      expect(checkpointCommits(s.h.repo.bare, s.branch)).toEqual([]);
    },
  ],
  [
    '`/goal approve`',
    async () => {
      const s = await scene(TWO, { files: { '.github/goal-loop.yml': 'require_plan_approval: true\n' } });
      await label(s);
      const since = await mark(s);
      const id = await say(s, '/goal approve', 'maya');
      await expectRow(row('`/goal approve`'), since);
      expect(reactions(s, id)).toEqual(['eyes', '+1']);
      expect(checkpointCommits(s.h.repo.bare, s.branch).map((c) => c.task)).toEqual(['one', 'two']);
    },
  ],
  [
    'A task is riskier than `max_risk`',
    async () => {
      const s = await scene(RISKY);
      const since = await mark(s);
      await label(s);
      await expectRow(row('A task is riskier than `max_risk`'), since);
      expect(await state(s)).toBe('AWAITING_APPROVAL');
      expect(goalLabels(s)).toEqual(['goal:awaiting-approval']);
      expect(botComments(s).some((c) => c.includes('`drop-table`') && c.includes('`/goal approve drop-table`'))).toBe(true);
      expect(checkpointCommits(s.h.repo.bare, s.branch).map((c) => c.task)).toEqual(['safe']);
    },
  ],
  [
    'A task fails `max_retries` attempts',
    async () => {
      const s = await scene(BROKEN);
      const since = await mark(s);
      await label(s);
      await expectRow(row('A task fails `max_retries` attempts'), since);
      expect(await state(s)).toBe('ESCALATED');
      expect(goalLabels(s)).toEqual(['goal:escalated']);
      const escalation = botComments(s).find((c) => c.includes(ESCALATION_MARKER));
      expect(escalation).toContain('`broken`');
      expect(escalation).toContain('1 attempt(s)');
      expect(escalation).toContain('no fix.txt yet');
      expect(escalation).toContain('@alice'); // the assignee, not the author
    },
  ],
  [
    '`/goal retry [task]`, `/goal resume` or `/goal skip <task>`',
    async () => {
      const r = row('`/goal retry [task]`, `/goal resume` or `/goal skip <task>`');
      for (const command of ['/goal retry broken', '/goal resume', '/goal skip broken']) {
        const s = await scene(BROKEN);
        await label(s);
        expect(await state(s)).toBe('ESCALATED');
        const since = await mark(s);
        const id = await say(s, command);
        await expectRow(r, since);
        expect(reactions(s, id), command).toEqual(['eyes', '+1']);
        // Without a fix, retry and resume escalate again; skip goes on without the task.
        expect(await state(s), command).toBe(command.includes('skip') ? 'LOOP_COMPLETE' : 'ESCALATED');
      }
    },
  ],
  [
    'The final gate passes',
    async () => {
      const s = await scene(TWO, { files: { '.github/goal-loop.yml': 'gate: ["test -f one.txt && test -f two.txt"]\n' } });
      const since = await mark(s);
      await label(s);
      await expectRow(row('The final gate passes'), since);
      expect(await state(s)).toBe('LOOP_COMPLETE');
      expect(goalLabels(s)).toEqual(['goal:review']);
      expect(s.h.fake.pulls[0]!.draft).toBe(false);
      expect(s.h.fake.checkRuns.at(-1)).toMatchObject({ name: 'goal-loop', status: 'completed', conclusion: 'success' });
    },
  ],
  [
    'The pull request is merged',
    async () => {
      const r = row('The pull request is merged');
      for (const issueFirst of [false, true]) {
        const s = await scene(TWO);
        await label(s);
        const pr = s.h.fake.pulls[0]!.number;
        const since = await mark(s);
        s.h.fake.mergePull(pr); // GitHub merges, then closes the issue the PR says it closes
        if (issueFirst) await closeIssue(s);
        await merge(s, pr);
        if (!issueFirst) await closeIssue(s);
        const order = issueFirst ? 'issues.closed first' : 'pull_request.closed first';
        await expectRow(r, since, s);
        expect(await state(s), order).toBe('LOOP_COMPLETE');
        expect(goalLabels(s), order).toEqual(['goal:done']);
        expect(statusBody(s), order).toContain(`[#${pr}](`);
        expect(statusBody(s), order).toContain(', merged: done');
        // A later status keeps it done; a command that would run it again is refused.
        await say(s, '/goal status');
        expect(goalLabels(s), order).toEqual(['goal:done']);
        const resume = await say(s, '/goal resume');
        expect(reactions(s, resume)).toEqual(['eyes', 'confused']);
        expect(botComments(s).at(-1)).toBe(`This goal is done: pull request #${pr} was merged. Open a new issue for more work.`);
        expect(await state(s), order).toBe('LOOP_COMPLETE');
      }
    },
  ],
  [
    'The pull request is closed without merging',
    async () => {
      const s = await scene(TWO);
      await label(s);
      const since = await mark(s);
      await s.h.deliver('pull_request', pullRequestClosed({ ...s.h.repoSpec, pull: { number: s.h.fake.pulls[0]!.number, head: s.branch }, merged: false }));
      await expectRow(row('The pull request is closed without merging'), since);
      expect(await state(s)).toBe('STOPPED');
      expect(goalLabels(s)).toEqual(['goal:stopped']);
      expect(statusBody(s)).toContain('> the pull request was closed without merging');
    },
  ],
  [
    'The issue is closed (not by the merge)',
    async () => {
      const s = await scene(TWO);
      await label(s);
      const since = await mark(s);
      await closeIssue(s);
      await expectRow(row('The issue is closed (not by the merge)'), since);
      expect(await state(s)).toBe('STOPPED');
      expect(goalLabels(s)).toEqual(['goal:stopped']);
      expect(statusBody(s)).toContain('> the issue was closed');
    },
  ],
  [
    'The `goal` label is removed, or `/goal pause`',
    async () => {
      const r = row('The `goal` label is removed, or `/goal pause`');
      for (const how of ['unlabel', '/goal pause'] as const) {
        const s = await scene(BROKEN);
        await label(s);
        const since = await mark(s);
        if (how === 'unlabel') await s.h.deliver('issues', issuesUnlabeled({ ...s.h.repoSpec, issue: s.issue, label: 'goal' }));
        else await say(s, how);
        await expectRow(r, since);
        expect(await state(s), how).toBe('PAUSED');
        expect(goalLabels(s), how).toEqual(['goal:paused']);
        expect(statusBody(s), how).toContain(how === 'unlabel' ? '> the goal label was removed' : '> paused by a human');
        // The label goes on again: the goal runs on (and escalates again without a fix).
        await label(s);
        expect(await state(s), how).toBe('ESCALATED');
      }
    },
  ],
  [
    '`/goal stop`',
    async () => {
      const s = await scene(BROKEN);
      await label(s);
      const since = await mark(s);
      await say(s, '/goal stop');
      await expectRow(row('`/goal stop`'), since);
      expect(await state(s)).toBe('STOPPED');
      expect(goalLabels(s)).toEqual(['goal:stopped']);
      expect(statusBody(s)).toContain('> stopped by a human');
    },
  ],
  [
    'A safeguard trips',
    async () => {
      const s = await scene(LIMITED);
      const since = await mark(s);
      await label(s);
      await expectRow(row('A safeguard trips'), since);
      expect(await state(s)).toBe('STOPPED');
      expect(goalLabels(s)).toEqual(['goal:stopped']);
      expect(statusBody(s)).toContain('> max\\_iterations reached (1)');
      expect(checkpointCommits(s.h.repo.bare, s.branch).map((c) => c.task)).toEqual(['one']);
    },
  ],
  [
    'An internal error',
    async () => {
      const s = await scene(TWO);
      await rm(s.h.repo.bare, { recursive: true }); // the clone URL leads nowhere
      const since = await mark(s);
      await label(s);
      await expectRow(row('An internal error'), since);
      expect(await state(s)).toBe('FAILED');
      expect(goalLabels(s)).toEqual(['goal:stopped']);
      expect(statusBody(s)).toMatch(/> internal: cannot prepare the workspace/);
    },
  ],
  [
    'A review requests changes',
    async () => {
      const s = await scene(TWO);
      await label(s);
      const pr = s.h.fake.pulls[0]!;
      const { review } = s.h.fake.addReview({ pullNumber: pr.number, state: 'CHANGES_REQUESTED', body: 'Add three.txt too.', user: 'maya' });
      const since = await mark(s);
      await s.h.deliver(
        'pull_request_review',
        pullRequestReviewSubmitted({
          ...s.h.repoSpec,
          sender: 'maya',
          pull: { number: pr.number, head: s.branch },
          review: { id: review.id, state: 'changes_requested', body: review.body ?? '', user: 'maya' },
        }),
      );
      await expectRow(row('A review requests changes'), since);
      expect(goalLabels(s)).toEqual(['goal:review']);
      const commits = checkpointCommits(s.h.repo.bare, s.branch);
      expect(commits.map((c) => c.task)).toEqual(['one', 'two', `review-${review.id}`]);
      const reply = s.h.fake.commentsOn(pr.number).find((c) => c.body.includes(`pullrequestreview-${review.id}`));
      expect(reply?.body).toContain(`in ${git(s.h.repo.bare, 'rev-parse', '--short=7', s.branch)}`);
    },
  ],
];

describe("README's lifecycle table: event → state → label → comment", () => {
  it('has a test for every row, and a row for every test', () => {
    const tested = TESTS.map(([prefix]) => row(prefix).event);
    expect([...tested].sort()).toEqual(ROWS.map((r) => r.event).sort());
  });

  for (const [prefix, test] of TESTS) it(prefix, test);
});
