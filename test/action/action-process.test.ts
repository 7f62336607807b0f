import { describe, expect, it } from 'vitest';
import { readCarriedState } from '../../src/action/carried-state.js';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { actionHarness, WORKFLOW_TOKEN } from '../helpers/action-harness.js';
import { startCli } from '../helpers/cli.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalBlock } from '../helpers/github-app-harness.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';

const GOAL = goalBlock(`
objective: Survive the runner
tasks:
  - { id: s1, title: Step one, run: "echo 1 > s1", verification: "test -f s1" }
  - { id: s2, title: Step two, run: "sleep 6; echo 2 > s2", verification: "test -f s2", dependencies: [s1] }
  - { id: s3, title: Step three, run: "echo 3 > s3", verification: "test -f s3", dependencies: [s2] }
`);
const ISSUE = { number: 9, title: 'Survive the runner', body: GOAL, user: 'alice', labels: ['goal'] };
const BRANCH = 'goal/9-survive-the-runner';

async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('goal-loop action as the runner runs it', () => {
  it('survives its runner: killed mid-goal (SIGKILL), a second run on an empty runner finishes the goal from GitHub, redoing no checkpoint', async () => {
    const h = await actionHarness({ issues: [ISSUE], bridge: true });
    const labeled = issuesLabeled({ ...h.repoSpec, issue: ISSUE, label: 'goal' });
    const first = await h.run({ eventName: 'issues', payload: labeled, runId: 9001 });
    h.fake.setWorkflowRun({ id: 9001, status: 'in_progress', conclusion: null, path: '.github/workflows/goal-loop.yml', event: 'issues', head_branch: 'main' });
    const run1 = startCli(['action'], first.env);
    // s1 is checkpointed (and the status comment carries it) and s2 is running (its step sleeps): the runner vanishes.
    const carried = () => {
      const c = h.fake.commentsOn(9).find((x) => x.body.startsWith(STATUS_MARKER));
      return c ? readCarriedState(c.body).state : undefined;
    };
    await until('s1 checkpointed and carried', () => checkpointCommits(h.repo.bare, BRANCH).length === 1 && carried()?.tasks[0]?.status === 'done');
    expect(carried()!.runner).toEqual({ runId: '9001', attempt: '1' });
    run1.child.kill('SIGKILL');
    const killed = await run1.done;
    expect(killed.signal).toBe('SIGKILL');
    const s1 = checkpointCommits(h.repo.bare, BRANCH);
    h.fake.setWorkflowRun({ id: 9001, status: 'completed', conclusion: 'cancelled', path: '.github/workflows/goal-loop.yml', event: 'issues', head_branch: 'main' });

    const dispatch = {
      inputs: { issue: '9' },
      ref: 'refs/heads/main',
      repository: (labeled as { repository: object }).repository,
      sender: { login: 'alice', type: 'User' },
      workflow: '.github/workflows/goal-loop.yml',
    };
    const second = await h.run({ eventName: 'workflow_dispatch', payload: dispatch, runId: 9002 });
    const run2 = await startCli(['action'], second.env).done;
    expect(run2.code, run2.stderr).toBe(0);

    const after = checkpointCommits(h.repo.bare, BRANCH);
    expect(after.map((c) => c.task)).toEqual(['s1', 's2', 's3']);
    expect(after[0]).toEqual(s1[0]); // s1 was not run again
    const status = h.fake.commentsOn(9).filter((c) => c.body.startsWith(STATUS_MARKER));
    expect(status).toHaveLength(1);
    expect(h.fake.pulls).toHaveLength(1);
    const state = readCarriedState(status[0]!.body).state!;
    expect(state.state).toBe('LOOP_COMPLETE');
    expect(state.tasks.find((t) => t.taskId === 's1')!.attempts).toBe(1);
    const outputs = await second.outputs();
    expect(outputs).toMatchObject({ goal_id: '9', state: 'LOOP_COMPLETE', branch: BRANCH, pr_number: String(h.fake.pulls[0]!.number) });
    expect(await second.summary()).toMatch(/\[x\] s2/);
    // The token: in no output, log, summary, comment or pushed object (the runner consumes its
    // ::add-mask:: line: that is how it learns to mask the token, and it is never shown).
    const unmasked = (out: string) =>
      out
        .split('\n')
        .filter((l) => !l.startsWith('::add-mask::'))
        .join('\n');
    for (const text of [
      unmasked(killed.stdout),
      killed.stderr,
      unmasked(run2.stdout),
      run2.stderr,
      await second.summary(),
      JSON.stringify(outputs),
      git(h.repo.bare, 'log', '--all', '-p', '--format=%B'),
      h.fake.comments.map((c) => c.body).join('\n'),
    ]) {
      expect(text).not.toContain(WORKFLOW_TOKEN);
    }
    expect(run2.stdout.split('\n')[0]).toBe(`::add-mask::${WORKFLOW_TOKEN}`);
  }, 120_000);
});
