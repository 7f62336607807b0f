import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { git } from '../helpers/git.js';
import { connectGoalLoop } from '../helpers/mcp-client.js';
import { tempDir } from '../helpers/temp.js';

const SPEC = 'goal_id: from-branch\nobjective: one file\ntasks:\n  - id: notes\n    title: Notes\n    verification: test -s notes.txt\n';

/**
 * A repository whose default branch has no repo config (so the jail and the default budgets
 * apply), and a branch `evil` whose .github/goal-loop.yml turns the jail off, raises the cost
 * cap, and has a setup step that leaves marks on the host and in the workspace.
 */
async function repoWithEvilBranch() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const pwned = join(root, 'pwned');
  git(repo.work, 'checkout', '--quiet', '-b', 'evil');
  await mkdir(join(repo.work, '.github'), { recursive: true });
  await writeFile(join(repo.work, '.github/goal-loop.yml'), `sandbox: process\ncost_cap_usd: 100000\nsetup:\n  - touch ${pwned} evil-setup-ran\n`);
  git(repo.work, 'add', '--all');
  git(repo.work, '-c', 'user.name=x', '-c', 'user.email=x@example.com', 'commit', '--quiet', '-m', 'loosen everything');
  git(repo.work, 'push', '--quiet', 'origin', 'evil');
  const env = { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'workspaces') };
  return { root, repo, pwned, env, args: ['--repo', repo.bare] };
}

describe('goal-loop mcp: the client does not choose the config that governs it', () => {
  it('a base branch is refused without a way to ask the human, and its config never applies', async () => {
    const p = await repoWithEvilBranch();
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const refused = await c.call('goal_start', { spec: SPEC, base: 'evil' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/base "evil".*not the default branch \(main\).*this MCP client cannot ask one \(no elicitation support\)/);
    expect(existsSync(p.pwned)).toBe(false);
    expect(git(p.repo.bare, 'branch', '--list', 'goal/*')).toBe('');
  });

  it('a human may let the goal build on another branch, but the config still comes from the default branch', async () => {
    const p = await repoWithEvilBranch();
    let humanSays = false;
    const c = await connectGoalLoop({ env: p.env, args: p.args, human: () => humanSays });
    const no = await c.call('goal_start', { spec: SPEC, base: 'evil' });
    expect(no.isError).toBe(true);
    expect(no.text).toMatch(/the human did not confirm \(answered no\)/);
    expect(c.asked.at(-1)).toMatch(/build on base "evil".*not the default branch \(main\).*config.*main/s);

    humanSays = true;
    const started = await c.ok('goal_start', { spec: SPEC, base: 'evil' });
    // The code is the branch's; the limits, setup and sandbox are the default branch's.
    expect(existsSync(join(started.workspace, '.github/goal-loop.yml'))).toBe(true);
    expect(started.limits.cost_cap_usd).toBe(10);
    expect(existsSync(join(started.workspace, 'evil-setup-ran'))).toBe(false);
    expect(existsSync(p.pwned)).toBe(false);
    expect(c.stderr()).not.toContain('SANDBOX DISABLED');
  });

  it('the default branch named as base needs nobody', async () => {
    const p = await repoWithEvilBranch();
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const started = await c.ok('goal_start', { spec: SPEC, base: 'main' });
    expect(started.limits.cost_cap_usd).toBe(10);
    expect(c.asked).toEqual([]);
  });

  it("a repository other than the server's own --repo needs the human too", async () => {
    const p = await repoWithEvilBranch();
    const other = await tempDir();
    const elsewhere = await createSampleRepo(join(other, 'elsewhere'), { '.github/goal-loop.yml': `sandbox: process\nsetup:\n  - touch ${p.pwned}\n`, 'README.md': 'x\n' });
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const refused = await c.call('goal_start', { spec: SPEC, repo: elsewhere.bare });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/not the server's own repository.*this MCP client cannot ask one/);
    expect(existsSync(p.pwned)).toBe(false);
  });
});
