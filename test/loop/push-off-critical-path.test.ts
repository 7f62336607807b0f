import { writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PROTECTED_PATHS } from '../../src/config/protected-paths.js';
import type { PendingPush } from '../../src/ports/workspace.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { ScriptedAgent } from '../helpers/scripted-agent.js';

const GOAL = {
  goal_id: 'pushes',
  objective: 'three files',
  tasks: [
    { id: 't1', title: 'One', verification: 'test -f t1.txt' },
    { id: 't2', title: 'Two', verification: 'test -f t2.txt', dependencies: ['t1'] },
    { id: 't3', title: 'Three', verification: 'test -f t3.txt', dependencies: ['t2'] },
  ],
};
const BRANCH = 'goal/pushes';

/** The real workspace, whose pushes wait until the test lets them go. */
class GatedWorkspace extends GitWorkspace {
  readonly published: string[] = [];
  gate: Promise<void> = Promise.resolve();
  override async publish(p: PendingPush): Promise<void> {
    await this.gate;
    await super.publish(p);
    this.published.push(p.sha);
  }
}

async function scene() {
  const h = await goalHarness();
  const workspace = new GatedWorkspace({
    remote: h.repo.bare,
    dir: h.workspaceDir,
    goalId: GOAL.goal_id,
    branch: BRANCH,
    protectedPaths: DEFAULT_PROTECTED_PATHS,
    identity: { name: 'goal-loop', email: 'goal-loop@example.com' },
  });
  let open!: () => void;
  workspace.gate = new Promise<void>((r) => {
    open = r;
  });
  const remoteTip = () => {
    try {
      return git(h.repo.bare, 'rev-parse', '--verify', '--quiet', `refs/heads/${BRANCH}`);
    } catch {
      return undefined;
    }
  };
  return { h, workspace, open, remoteTip };
}

describe('checkpoints pushed off the critical path (the outbox pushes while the next task runs)', () => {
  it('the next task runs before the checkpoint is pushed; the report of a checkpoint comes only once it is on the remote', async () => {
    const { h, workspace, open, remoteTip } = await scene();
    const seenByT2: Array<string | undefined> = [];
    const agent = new ScriptedAgent(async ({ task, workspaceDir }) => {
      if (task.id === 't2') {
        seenByT2.push(remoteTip());
        open();
      }
      await writeFile(join(workspaceDir, `${task.id}.txt`), `${task.id}\n`);
    });
    const reported: Array<{ taskId: string; onRemote: boolean }> = [];
    h.forge.checkpointed = async (_s, c) => {
      reported.push({ taskId: c.taskId, onRemote: git(h.repo.bare, 'merge-base', '--is-ancestor', c.sha, `refs/heads/${BRANCH}`) === '' });
    };
    const result = await h.run(GOAL, { agent, workspace });

    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    // t2 worked while t1's commit was not on the remote yet.
    expect(seenByT2).toEqual([undefined]);
    expect(reported).toEqual([
      { taskId: 't1', onRemote: true },
      { taskId: 't2', onRemote: true },
      { taskId: 't3', onRemote: true },
    ]);
    expect(checkpointCommits(h.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1', 't2', 't3']);
    expect(remoteTip()).toBe(result.checkpoints.at(-1)!.sha);
    expect(await h.ledger.pendingEffects()).toEqual([]);
  });

  it('a push rejected after the next task started (someone pushed to the goal branch): back to their branch, the unpushed tasks done again on top of it', async () => {
    const { h, workspace, open, remoteTip } = await scene();
    const human = join(h.root, 'human');
    const calls: string[] = [];
    const agent = new ScriptedAgent(async ({ task, workspaceDir }) => {
      calls.push(task.id);
      if (task.id === 't2' && calls.filter((c) => c === 't2').length === 1) {
        // While t1's push waits: a human creates the goal branch with a commit of their own.
        git(h.root, 'clone', '--quiet', h.repo.bare, human);
        git(human, 'checkout', '--quiet', '-b', BRANCH);
        writeFileSync(join(human, 'human.txt'), 'mine\n');
        git(human, 'add', 'human.txt');
        git(human, '-c', 'user.name=h', '-c', 'user.email=h@example.com', 'commit', '--quiet', '-m', 'human start');
        git(human, 'push', '--quiet', 'origin', BRANCH);
        open();
      }
      await writeFile(join(workspaceDir, `${task.id}.txt`), `${task.id}\n`);
    });
    const result = await h.run(GOAL, { agent, workspace });

    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(calls).toEqual(['t1', 't2', 't1', 't2', 't3']);
    expect(git(h.repo.bare, 'log', '--format=%s', BRANCH).split('\n').slice(0, 4)).toEqual(['t3: Three', 't2: Two', 't1: One', 'human start']);
    expect(remoteTip()).toBe(result.checkpoints.at(-1)!.sha);
    expect(result.checkpoints.map((c) => c.task_id)).toEqual(['t1', 't2', 't3']);
    // No report named a commit that never reached the remote.
    for (const c of h.forge.checkpoints) expect(git(h.repo.bare, 'merge-base', '--is-ancestor', c.sha, `refs/heads/${BRANCH}`)).toBe('');
    // The push that could not be done is kept as given up, with why (and t2's too, when it was
    // committed before t1's push came back).
    const givenUp = await h.ledger.givenUpEffects();
    expect(new Set(givenUp.map((e) => e.kind))).toEqual(new Set(['push']));
    expect(givenUp[0]!.lastError).toMatch(/the checkpoint of t1 \([0-9a-f]{7}\) could not be pushed: the goal branch goal\/pushes moved on the remote/);
    const goal = await h.ledger.getGoal({ repo: h.repo.bare, goalId: 'pushes' });
    expect(goal!.counters.errors).toBe(1);
  });

  it('inlinePushes (the Action, whose ledger ends with its runner): the next task starts only once the checkpoint is on the remote', async () => {
    const { h, workspace, open, remoteTip } = await scene();
    open();
    const seen: Array<string | undefined> = [];
    const agent = new ScriptedAgent(async ({ task, workspaceDir }) => {
      seen.push(remoteTip());
      await writeFile(join(workspaceDir, `${task.id}.txt`), `${task.id}\n`);
    });
    const result = await h.run(GOAL, { agent, workspace, inlinePushes: true });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    const shas = result.checkpoints.map((c) => c.sha);
    expect(seen).toEqual([undefined, shas[0], shas[1]]);
  });

  it('a report that fails and waits for its retry holds no push back: every checkpoint reaches the remote before the final gate', async () => {
    const { h, workspace, open, remoteTip } = await scene();
    open();
    const agent = new ScriptedAgent(async ({ task, workspaceDir }) => {
      await writeFile(join(workspaceDir, `${task.id}.txt`), `${task.id}\n`);
    });
    h.forge.checkpointed = async (_s, c) => {
      if (c.taskId === 't1') throw new Error('GitHub: 502 Bad Gateway');
    };
    const result = await h.run({ ...GOAL, acceptance_criteria: [{ description: 'all pushed', check: 'true' }] }, { agent, workspace });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(remoteTip()).toBe(result.checkpoints.at(-1)!.sha);
    expect(workspace.published).toHaveLength(3);
    // The report waits for its retry, and what follows it waits behind it; no push does.
    const pending = await h.ledger.pendingEffects();
    expect(pending.map((e) => e.kind)).not.toContain('push');
    expect(pending[0]).toMatchObject({ kind: 'checkpointed', payload: { taskId: 't1' } });
  });

  it('a push that fails for a reason that may pass is tried again, and nothing is lost', async () => {
    const { h, workspace, open } = await scene();
    open();
    let failures = 1;
    const publish = workspace.publish.bind(workspace);
    workspace.publish = async (p) => {
      if (failures-- > 0) throw new Error('fatal: unable to access the remote: Could not resolve host');
      return publish(p);
    };
    const agent = new ScriptedAgent(async ({ task, workspaceDir }) => {
      await writeFile(join(workspaceDir, `${task.id}.txt`), `${task.id}\n`);
    });
    const result = await h.run(GOAL, { agent, workspace });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(checkpointCommits(h.repo.bare, BRANCH).map((c) => c.task)).toEqual(['t1', 't2', 't3']);
    expect(await h.ledger.givenUpEffects()).toEqual([]);
    expect((await h.ledger.getGoal({ repo: h.repo.bare, goalId: 'pushes' }))!.counters.errors).toBe(0);
  });
});
