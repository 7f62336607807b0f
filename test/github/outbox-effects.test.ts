import { describe, expect, it } from 'vitest';
import { effectMarker, GitHubForge, type Octokit } from '../../src/github/github-forge.js';
import type { AttemptEntry, AttemptLogEntry } from '../../src/ports/attempt-log.js';
import { readGitHubMeta } from '../../src/steering/goal-meta.js';
import { ESCALATION_MARKER } from '../../src/steering/report/status-comment.js';
import { snapshotFromLedger } from '../../src/steering/turn/snapshot.js';
import { appHarness, goalBlock, INSTALLATION, OWNER, REPO, silent } from '../helpers/github-app-harness.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';

const ISSUE = {
  number: 51,
  title: 'Effects',
  body: goalBlock(`objective: Report once
tasks:
  - { id: t1, title: One, run: "echo 1 > one", verification: "test -f one" }
`),
  user: 'alice',
  labels: ['goal'],
};
const KEY = { repo: `${OWNER}/${REPO}`, goalId: '51' };
const escalation = { task_id: 't1', attempts: 3, last_error: 'it failed' };

/** A goal done through the App, and a fresh forge on it, as the sweep builds one. */
async function scene() {
  const h = await appHarness({ issues: [ISSUE] });
  await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' }));
  const g = readGitHubMeta((await h.ledger.getGoal(KEY))!.meta).github!;
  const octokit = (await h.probot.auth(INSTALLATION)) as unknown as Octokit;
  const forge = new GitHubForge({ octokit, goal: g, key: KEY, ledger: h.ledger, logger: silent, minUpdateIntervalMs: 0 });
  const snapshot = () => snapshotFromLedger(h.ledger, KEY, g);
  const escalations = () => h.fake.commentsOn(51).filter((c) => c.body.includes(ESCALATION_MARKER));
  return { h, g, octokit, forge, snapshot, escalations };
}

describe('outbox effects on GitHub: once, however often they are tried', () => {
  it('a retry finds the comment an earlier try posted (by its marker) and posts no second one', async () => {
    const s = await scene();
    await s.forge.escalate(await s.snapshot(), escalation, { id: '51.7', retry: false });
    await s.forge.escalate(await s.snapshot(), escalation, { id: '51.7', retry: true });
    expect(s.escalations()).toHaveLength(1);
    expect(s.escalations()[0]!.body).toContain(effectMarker('51.7'));
    // Another effect is another comment.
    await s.forge.escalate(await s.snapshot(), escalation, { id: '51.8', retry: true });
    expect(s.escalations()).toHaveLength(2);
  });

  it("attack: a person's comment carrying the marker does not suppress the escalation", async () => {
    const s = await scene();
    s.h.fake.addComment(51, `nothing to see ${effectMarker('51.9')}`, 'rob');
    await s.forge.escalate(await s.snapshot(), escalation, { id: '51.9', retry: true });
    expect(s.escalations()).toHaveLength(1);
    expect(s.escalations()[0]!.user).not.toBe('rob');
  });

  it('attack: a marker forged in a verification tail (<!<!---->-- … -->) never stands for the effect it names', async () => {
    const s = await scene();
    // One pass of stripping comments would turn this into the next effect's marker, inside the posted escalation.
    const forged = { ...escalation, last_error: 'npm test\n<!<!---->-- goal-loop:effect 51.21 -->\nFAIL' };
    await s.forge.escalate(await s.snapshot(), forged, { id: '51.20', retry: false });
    expect(s.escalations()).toHaveLength(1);
    expect(s.escalations()[0]!.body).not.toContain(effectMarker('51.21'));
    await s.forge.escalate(await s.snapshot(), escalation, { id: '51.21', retry: true });
    expect(s.escalations()).toHaveLength(2);
  });

  it("attack: the bot's own comment quoting a marker mid-body is not the comment that marker is on", async () => {
    const s = await scene();
    s.h.fake.addComment(51, `output:\n\n\`\`\`text\n${effectMarker('51.22')}\n\`\`\`\n\ndone`, s.h.fake.botLogin);
    await s.forge.escalate(await s.snapshot(), escalation, { id: '51.22', retry: true });
    expect(s.escalations()).toHaveLength(1);
    expect(s.escalations()[0]!.body.trim().split('\n').at(-1)).toBe(effectMarker('51.22'));
  });

  it('a record of wide characters (中, @) reaches GitHub within its byte limits: the escalation comment, the check run, the PR body', async () => {
    const s = await scene();
    const rows: AttemptLogEntry[] = [];
    const push = (taskId: string, attempt: number, entry: AttemptEntry) => rows.push({ seq: rows.length + 1, at: '', taskId, attempt, entry });
    const wide = (n: number) => '中@'.repeat(n);
    for (const taskId of ['t1', ...Array.from({ length: 19 }, (_, i) => `other-${i}`)]) {
      for (let a = 1; a <= 3; a++) {
        const tail = Array.from({ length: 50 }, () => wide(100)).join('\n');
        push(taskId, a, { kind: 'step', command: wide(200), exitCode: 1, durationMs: 5, timedOut: false, tail });
        for (let turn = 1; turn <= 5; turn++)
          push(taskId, a, { kind: 'turn', turn, text: wide(200), tools: Array.from({ length: 30 }, () => ({ name: wide(35), input: wide(100), result: wide(100), isError: true })) });
        push(taskId, a, { kind: 'verify', command: wide(200), exitCode: 1, durationMs: 5, timedOut: false, passed: false, tail });
        push(taskId, a, { kind: 'end', outcome: 'failed', reason: wide(200), tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 }, costUsd: 0, durationMs: 5 });
      }
    }
    const attemptLog = { listAttemptEntries: async () => rows };
    const forge = new GitHubForge({ octokit: s.octokit, goal: s.g, key: KEY, ledger: s.h.ledger, logger: silent, minUpdateIntervalMs: 0, attemptLog });
    await forge.escalate(await s.snapshot(), { ...escalation, last_error: wide(5000) }, { id: '51.30', retry: false });
    const sha = (await s.h.ledger.listTasks(KEY))[0]!.checkpointSha!;
    const result = {
      goal_id: '51',
      status: 'ESCALATED' as const,
      success: false,
      tasks_completed: 0,
      tasks_total: 1,
      iterations: 1,
      errors_recovered: 0,
      tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 },
      cost_usd: 0,
      duration_s: 1,
      stop_reason: 'escalated',
      branch: s.g.branch,
      checkpoints: [{ task_id: 't1', sha }],
    };
    await forge.finished(result, await s.snapshot(), { id: '51.31', retry: false });
    expect(s.h.fake.violations).toEqual([]);
    expect(s.escalations()).toHaveLength(1);
    expect(Buffer.byteLength(s.escalations()[0]!.body, 'utf8')).toBeGreaterThan(40_000);
    const run = s.h.fake.checkRuns.filter((c) => c.name === 'goal-loop' && c.headSha === sha).at(-1)!;
    expect(Buffer.byteLength(String(run.output!.text), 'utf8')).toBeGreaterThan(40_000);
    expect(s.h.fake.pulls[0]!.body).toContain('### Changes per task');
  });

  it('a review is answered with the checkpoint that fixed it, once, and leaves the pending list', async () => {
    const s = await scene();
    const pr = s.h.fake.pulls[0]!;
    await s.h.ledger.setMeta(KEY, {
      pendingReviews: [
        { taskId: 't1', prNumber: pr.number, reviewId: 77 },
        { taskId: 'later', prNumber: pr.number, reviewId: 78 },
      ],
    });
    const cp = { taskId: 't1', sha: 'abcdef1234567' };
    await s.forge.checkpointed(await s.snapshot(), cp, { id: '51.10', retry: false });
    await s.forge.checkpointed(await s.snapshot(), cp, { id: '51.10', retry: true });
    const replies = s.h.fake.commentsOn(pr.number).filter((c) => c.body.includes('Addressed review'));
    expect(replies).toHaveLength(1);
    expect(replies[0]!.body).toMatch(/pullrequestreview-77 in abcdef1 \(task `t1`, verified\)/);
    expect(readGitHubMeta((await s.h.ledger.getGoal(KEY))!.meta).pendingReviews).toEqual([{ taskId: 'later', prNumber: pr.number, reviewId: 78 }]);
  });

  it("a review whose fix a run found already pushed (its checkpoint had no report) is answered by the run's end, once", async () => {
    const s = await scene();
    const pr = s.h.fake.pulls[0]!;
    await s.h.ledger.setMeta(KEY, { pendingReviews: [{ taskId: 't1', prNumber: pr.number, reviewId: 90 }] });
    const sha = (await s.h.ledger.listTasks(KEY))[0]!.checkpointSha!;
    const result = {
      goal_id: '51',
      status: 'LOOP_COMPLETE' as const,
      success: true,
      tasks_completed: 1,
      tasks_total: 1,
      iterations: 1,
      errors_recovered: 0,
      tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 },
      cost_usd: 0,
      duration_s: 1,
      stop_reason: null,
      branch: s.g.branch,
      checkpoints: [{ task_id: 't1', sha }],
    };
    await s.forge.finished(result, await s.snapshot(), { id: '51.11', retry: false });
    // Both effects may answer it (a checkpoint's report performed late): one reply still.
    await s.h.ledger.setMeta(KEY, { pendingReviews: [{ taskId: 't1', prNumber: pr.number, reviewId: 90 }] });
    await s.forge.checkpointed(await s.snapshot(), { taskId: 't1', sha }, { id: '51.12', retry: false });
    const replies = s.h.fake.commentsOn(pr.number).filter((c) => c.body.includes('pullrequestreview-90'));
    expect(replies).toHaveLength(1);
    expect(readGitHubMeta((await s.h.ledger.getGoal(KEY))!.meta).pendingReviews).toEqual([]);
  });
});
