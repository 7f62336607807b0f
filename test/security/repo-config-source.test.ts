import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { runCli } from '../helpers/cli.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

// The repo config is the owner's word: read from the base branch (or --config), never from the
// goal branch, which a task writes. A config that turned the jail off would let a later run (a
// resume) execute setup on the host.
async function project() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const env = { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'workspaces') };
  return { root, repo, env };
}

describe('the repo config comes from the base branch only', () => {
  it('a config committed on the goal branch (by a task, or a pushed checkpoint) is not read on resume', async () => {
    const p = await project();
    const marker = join(p.root, 'PWNED-unjailed');
    // The goal branch already carries a config that turns the jail off and runs a setup step
    // that can only reach `marker` on the host, as a task could have committed it.
    git(p.repo.work, 'checkout', '-q', '-b', 'goal/cfg');
    await mkdir(join(p.repo.work, '.github'), { recursive: true });
    await writeFile(join(p.repo.work, '.github', 'goal-loop.yml'), `sandbox: process\nnetwork: setup\nsetup: ["touch ${marker} || true"]\n`);
    git(p.repo.work, 'add', '.github/goal-loop.yml');
    git(p.repo.work, '-c', 'user.name=a', '-c', 'user.email=b', 'commit', '-qm', 'a task rewrote the repo config');
    git(p.repo.work, 'push', '-q', 'origin', 'goal/cfg');
    git(p.repo.work, 'checkout', '-q', 'main');

    const goal = join(p.root, 'goal.yml');
    await writeFile(goal, 'goal_id: cfg\nobjective: resume\ntasks:\n  - id: one\n    title: one\n    run: echo 1 > one.txt\n    verification: test -f one.txt\n');
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', goal, '--agent', 'scripted', '--json'], p.env);
    expect(existsSync(marker)).toBe(false);
    expect(r.stderr).not.toMatch(/sandbox: process/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'LOOP_COMPLETE' });
  });

  it('the base branch config still applies', async () => {
    const p = await project();
    await mkdir(join(p.repo.work, '.github'), { recursive: true });
    await writeFile(join(p.repo.work, '.github', 'goal-loop.yml'), 'setup: ["echo from-base > base.txt"]\n');
    git(p.repo.work, 'add', '.github/goal-loop.yml');
    git(p.repo.work, '-c', 'user.name=a', '-c', 'user.email=b', 'commit', '-qm', 'owner config');
    git(p.repo.work, 'push', '-q', 'origin', 'main');
    const goal = join(p.root, 'goal.yml');
    await writeFile(goal, 'goal_id: base-cfg\nobjective: x\ntasks:\n  - id: one\n    title: one\n    run: cat base.txt > one.txt\n    verification: grep -q from-base one.txt\n');
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', goal, '--agent', 'scripted'], p.env);
    expect(r.code).toBe(0);
  });

  it('a task may not change the repo config: the checkpoint is refused by default', async () => {
    const p = await project();
    const goal = join(p.root, 'goal.yml');
    await writeFile(
      goal,
      'goal_id: cfg-edit\nobjective: x\ntasks:\n  - id: edit\n    title: edit\n    max_retries: 1\n    run: \'mkdir -p .github && echo "sandbox: process" > .github/goal-loop.yml\'\n    verification: "true"\n',
    );
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', goal, '--agent', 'scripted', '--json'], p.env);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).escalation.last_error).toContain('.github/goal-loop.yml');
    expect(checkpointCommits(p.repo.bare, 'goal/cfg-edit')).toEqual([]);
  });

  it('a checkout with a goal branch checked out is refused without --base (its HEAD is what tasks wrote)', async () => {
    const p = await project();
    git(p.repo.work, 'checkout', '-q', '-b', 'goal/review-me');
    await mkdir(join(p.repo.work, '.github'), { recursive: true });
    await writeFile(join(p.repo.work, '.github', 'goal-loop.yml'), 'sandbox: process\n');
    git(p.repo.work, 'add', '.github/goal-loop.yml');
    git(p.repo.work, '-c', 'user.name=a', '-c', 'user.email=b', 'commit', '-qm', 'written by a task');
    const goal = join(p.root, 'goal.yml');
    await writeFile(goal, 'goal_id: look\nobjective: x\ntasks:\n  - id: one\n    title: one\n    run: echo 1 > one.txt\n    verification: test -f one.txt\n');
    const r = await runCli(['run', '--repo', p.repo.work, '--goal', goal, '--agent', 'scripted'], p.env);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/goal\/review-me checked out.*--base/);
    const ok = await runCli(['run', '--repo', p.repo.work, '--goal', goal, '--agent', 'scripted', '--base', 'main'], p.env);
    expect(ok.stderr).not.toMatch(/sandbox: process/);
    expect(ok.code).toBe(0);
  });

  it('a checkout at a detached HEAD is refused without --base or --config (no branch names whose config applies)', async () => {
    const p = await project();
    git(p.repo.work, 'checkout', '-q', '--detach');
    await mkdir(join(p.repo.work, '.github'), { recursive: true });
    await writeFile(join(p.repo.work, '.github', 'goal-loop.yml'), 'sandbox: process\n');
    git(p.repo.work, 'add', '.github/goal-loop.yml');
    git(p.repo.work, '-c', 'user.name=a', '-c', 'user.email=b', 'commit', '-qm', 'detached config');
    const goal = join(p.root, 'goal.yml');
    await writeFile(goal, 'goal_id: detached\nobjective: x\ntasks:\n  - id: one\n    title: one\n    run: echo 1 > one.txt\n    verification: test -f one.txt\n');
    const r = await runCli(['run', '--repo', p.repo.work, '--goal', goal, '--agent', 'scripted'], p.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/detached HEAD.*--base.*--config/);
    expect(r.stderr).not.toMatch(/sandbox: process|SANDBOX DISABLED/);
    const ok = await runCli(['run', '--repo', p.repo.work, '--goal', goal, '--agent', 'scripted', '--base', 'main'], p.env);
    expect(ok.stderr).not.toMatch(/SANDBOX DISABLED/);
    expect(ok.code).toBe(0);
  });

  it("a --repo under goal-loop's own workspaces is refused", async () => {
    const p = await project();
    const inside = join(p.env.GOAL_LOOP_WORKSPACES, 'x');
    await mkdir(inside, { recursive: true });
    git(inside, 'init', '-q', '--bare');
    const goal = join(p.root, 'goal.yml');
    await writeFile(goal, 'goal_id: ws\nobjective: x\ntasks:\n  - id: one\n    title: one\n    verification: "true"\n');
    const r = await runCli(['run', '--repo', inside, '--goal', goal, '--agent', 'scripted'], p.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/goal-loop's own workspaces/);
  });

  it("an owner's own protected_paths list still protects the repo config", async () => {
    const p = await project();
    await mkdir(join(p.repo.work, '.github'), { recursive: true });
    await writeFile(join(p.repo.work, '.github', 'goal-loop.yml'), 'protected_paths: ["migrations/**"]\n');
    git(p.repo.work, 'add', '.github/goal-loop.yml');
    git(p.repo.work, '-c', 'user.name=a', '-c', 'user.email=b', 'commit', '-qm', 'owner config');
    git(p.repo.work, 'push', '-q', 'origin', 'main');
    const goal = join(p.root, 'goal.yml');
    await writeFile(
      goal,
      'goal_id: cfg-own\nobjective: x\ntasks:\n  - id: edit\n    title: edit\n    max_retries: 1\n    run: \'echo "sandbox: process" > .github/goal-loop.yml\'\n    verification: "true"\n',
    );
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', goal, '--agent', 'scripted', '--json'], p.env);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).escalation.last_error).toContain('.github/goal-loop.yml');
  });
});
