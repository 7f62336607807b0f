import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CommandRequest, CommandResult } from '../../src/ports/sandbox.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { ScriptedAgent } from '../helpers/scripted-agent.js';

const task = (id: string, extra: Record<string, unknown> = {}) => ({ id, title: `Task ${id}`, verification: 'true', ...extra });

/** The process sandbox, keeping how each command ended: a kill is checked, not the run's duration. */
class RecordingSandbox extends ProcessSandbox {
  private readonly results: Array<{ command: string; result: CommandResult }> = [];
  override async run(request: CommandRequest): Promise<CommandResult> {
    const result = await super.run(request);
    this.results.push({ command: request.command, result });
    return result;
  }
  ended(command: string): CommandResult[] {
    return this.results.filter((r) => r.command === command).map((r) => r.result);
  }
}

// What only real git, SQLite and processes can show: checkpoints on a real branch, rollback of
// real files, a human's push, a resume from git, a killed command, setup output kept by git.
// The loop's logic is checked in seconds on in-memory ports: controller-fast.test.ts.
describe('runGoal with real git, SQLite and processes', () => {
  it('runs every task, one checkpoint commit per task in dependency order, then the final gate', async () => {
    const h = await goalHarness();
    const result = await h.run({
      goal_id: 'three',
      objective: 'three files',
      acceptance_criteria: [{ description: 'all files', check: 'test -f a && test -f b && test -f c' }, 'a plain criterion'],
      tasks: [
        task('t-a', { run: 'echo a > a', verification: 'test -f a' }),
        task('t-c', { run: 'echo c > c', verification: 'test -f c', dependencies: ['t-b'] }),
        task('t-b', { run: 'echo b > b', verification: 'test -f b && test -f a', dependencies: ['t-a'] }),
      ],
    });
    expect(result).toMatchObject({
      goal_id: 'three',
      status: 'LOOP_COMPLETE',
      success: true,
      tasks_completed: 3,
      tasks_total: 3,
      iterations: 3,
      errors_recovered: 0,
      branch: 'goal/three',
      stop_reason: null,
    });
    const commits = checkpointCommits(h.repo.bare, 'goal/three');
    expect(commits.map((c) => c.task)).toEqual(['t-a', 't-b', 't-c']);
    expect(commits.map((c) => c.goal)).toEqual(['three', 'three', 'three']);
    expect(result.checkpoints.map((c) => c.sha)).toEqual(git(h.repo.bare, 'log', '--reverse', '--format=%H', 'main..goal/three').split('\n'));
    expect(h.forge.states()).toContain('FINAL_GATE');
    const events = await h.ledger.listEvents({ repo: h.repo.bare, goalId: 'three' });
    expect(events.at(-1)).toMatchObject({ from: 'FINAL_GATE', to: 'LOOP_COMPLETE' });
    expect(events.map((e) => e.to)).toEqual(expect.arrayContaining(['DECOMPOSING', 'TASK_PENDING', 'EXECUTING', 'EVALUATING', 'STATE_COMMIT']));
    const attempts = await h.ledger.listAttempts({ repo: h.repo.bare, goalId: 'three' });
    expect(attempts.filter((a) => a.phase === 'gate')).toMatchObject([{ taskId: 'final-gate', passed: true }]);
  });

  it('gives run steps and verification GOAL_ID, GOAL_TASK_ID and GOAL_ATTEMPT, and nothing of the host env', async () => {
    process.env.GOAL_LOOP_TEST_SECRET = 'do-not-leak';
    try {
      const h = await goalHarness();
      const result = await h.run({
        goal_id: 'env-goal',
        objective: 'env',
        tasks: [task('t1', { run: 'env > env.txt', verification: 'test "$GOAL_ID/$GOAL_TASK_ID/$GOAL_ATTEMPT" = env-goal/t1/1' })],
      });
      expect(result.status).toBe('LOOP_COMPLETE');
      const env = git(h.repo.bare, 'show', 'goal/env-goal:env.txt');
      expect(env).toContain('GOAL_TASK_ID=t1');
      expect(env).not.toContain('do-not-leak');
      expect(env).not.toMatch(/^ANTHROPIC|^GITHUB_TOKEN/m);
    } finally {
      delete process.env.GOAL_LOOP_TEST_SECRET;
    }
  });

  it('rolls a failed attempt back and feeds its failure to the next attempt, which repairs it', async () => {
    const h = await goalHarness();
    const leftovers: boolean[] = [];
    const agent = new ScriptedAgent(async ({ attempt, workspaceDir }) => {
      leftovers.push(existsSync(join(workspaceDir, 'attempt-1.txt')));
      await writeFile(join(workspaceDir, `attempt-${attempt}.txt`), 'x');
      await writeFile(join(workspaceDir, 'answer.txt'), attempt === 1 ? 'wrong\n' : 'right\n');
    });
    const result = await h.run(
      {
        goal_id: 'repair',
        objective: 'repair',
        tasks: [task('t1', { verification: 'grep -q right answer.txt || { echo "answer is $(cat answer.txt)"; exit 1; }' })],
      },
      { agent },
    );
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2, errors_recovered: 1 });
    expect(agent.calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(leftovers).toEqual([false, false]);
    expect(agent.calls[0]!.previousFailure).toBeUndefined();
    expect(agent.calls[1]!.previousFailure).toMatch(/verification .* exited with code 1/);
    expect(agent.calls[1]!.previousFailure).toContain('answer is wrong');
    const [commit] = checkpointCommits(h.repo.bare, 'goal/repair');
    expect(commit).toMatchObject({ task: 't1', attempt: '2' });
    // Attempt 1's stray file was rolled back: it is not in the checkpoint.
    expect(git(h.repo.bare, 'ls-tree', '--name-only', 'goal/repair').split('\n')).toEqual(expect.arrayContaining(['attempt-2.txt', 'answer.txt']));
    expect(git(h.repo.bare, 'ls-tree', '--name-only', 'goal/repair')).not.toContain('attempt-1.txt');
  });

  it('resumes after an escalation once a human fixed the branch, with fresh retries', async () => {
    const h = await goalHarness();
    const spec = {
      goal_id: 'fixable',
      objective: 'needs a human',
      tasks: [task('first', { run: 'echo 1 > one' }), task('needs-fix', { verification: 'test -f human-fix', dependencies: ['first'], max_retries: 1 })],
    };
    expect((await h.run(spec)).status).toBe('ESCALATED');
    // A human pushes the fix to the goal branch.
    const human = join(h.root, 'human');
    git(h.root, 'clone', '-q', '--branch', 'goal/fixable', h.repo.bare, human);
    await writeFile(join(human, 'human-fix'), 'done');
    git(human, 'add', '-A');
    git(human, '-c', 'user.name=h', '-c', 'user.email=h@h', 'commit', '-qm', 'fix');
    git(human, 'push', '-q', 'origin', 'goal/fixable');
    const second = await h.run(spec);
    expect(second).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 2 });
    expect(checkpointCommits(h.repo.bare, 'goal/fixable').map((c) => c.task)).toEqual(['first', 'needs-fix']);
  });

  it('does not redo tasks that have a checkpoint when run again', async () => {
    const h = await goalHarness();
    const spec = { goal_id: 'again', objective: 'idempotent', tasks: [task('a', { run: 'echo a >> a' }), task('b', { run: 'echo b >> b', dependencies: ['a'] })] };
    const first = await h.run(spec);
    const second = await h.run(spec);
    expect(second).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 2, iterations: first.iterations });
    expect(checkpointCommits(h.repo.bare, 'goal/again')).toHaveLength(2);
    expect(git(h.repo.bare, 'show', 'goal/again:a')).toBe('a');
  });

  it('counts a timeout as a failed attempt and kills the command', async () => {
    const sandbox = new RecordingSandbox();
    const h = await goalHarness({ sandbox });
    const result = await h.run({
      goal_id: 'slow',
      objective: 'timeout',
      tasks: [task('hang', { verification: 'sleep 30', max_retries: 1 })],
      limits: { task_timeout_s: 1 },
    });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation!.last_error).toMatch(/timed out after 1s/);
    const sleeps = sandbox.ended('sleep 30');
    expect(sleeps.length).toBeGreaterThan(0);
    for (const r of sleeps) expect(r).toMatchObject({ timedOut: true, exitCode: null }); // killed, not waited for
  });

  it('pauses within moments when a pause is requested through the ledger, rolling back the attempt', async () => {
    const sandbox = new RecordingSandbox();
    const h = await goalHarness({ sandbox });
    h.forge.onUpdate = (s) => {
      if (s.state === 'EXECUTING') void h.ledger.setControl({ repo: h.repo.bare, goalId: 'pausable' }, 'pause');
    };
    const result = await h.run({ goal_id: 'pausable', objective: 'pause', tasks: [task('long', { run: 'touch partial; sleep 30' })] });
    expect(result.status).toBe('PAUSED');
    expect(sandbox.ended('touch partial; sleep 30')).toMatchObject([{ aborted: true, exitCode: null }]); // stopped by the pause, not waited for
    expect(existsSync(join(h.workspaceDir, 'partial'))).toBe(false);
    expect((await h.ledger.getGoal({ repo: h.repo.bare, goalId: 'pausable' }))!.control).toBe('pause'); // the human's last word, until a newer one
  });

  it('runs setup before the tasks and keeps its ignored output across rollbacks', async () => {
    const h = await goalHarness({ files: { '.gitignore': 'deps/\n', 'README.md': 'x\n' } });
    const result = await h.run(
      {
        goal_id: 'setup',
        objective: 'setup',
        tasks: [task('uses-deps', { run: 'touch stray', verification: 'test -f deps/lib && test "$GOAL_ATTEMPT" = 2' })],
      },
      { setup: ['mkdir -p deps && echo lib > deps/lib'] },
    );
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2 });
    expect(git(h.repo.bare, 'ls-tree', '-r', '--name-only', 'goal/setup')).not.toContain('deps/lib');
  });

  it('refuses a checkpoint that edits .github/workflows and lets the repair loop try again', async () => {
    const h = await goalHarness();
    const result = await h.run({
      goal_id: 'wf',
      objective: 'protected',
      tasks: [task('ci', { run: 'if [ "$GOAL_ATTEMPT" = 1 ]; then mkdir -p .github/workflows && echo x > .github/workflows/ci.yml; fi; echo ok > ok' })],
    });
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2, errors_recovered: 1 });
    const attempts = await h.ledger.listAttempts({ repo: h.repo.bare, goalId: 'wf' });
    expect(attempts.find((a) => a.phase === 'checkpoint')?.output).toMatch(/protected paths \(\.github\/workflows\/ci\.yml\)/);
  });

  it('reports an unreachable remote as an internal failure, not a crash', async () => {
    const h = await goalHarness();
    await mkdir(join(h.root, 'not-a-repo'));
    const { GitWorkspace } = await import('../../src/workspace/git-workspace.js');
    const result = await h.run(
      { goal_id: 'noremote', objective: 'x', tasks: [task('a')] },
      { workspace: new GitWorkspace({ remote: join(h.root, 'not-a-repo'), dir: join(h.root, 'ws2'), goalId: 'noremote', branch: 'goal/noremote' }) },
    );
    expect(result.status).toBe('FAILED');
    expect(result.stop_reason).toMatch(/cannot prepare the workspace/);
  });
});
