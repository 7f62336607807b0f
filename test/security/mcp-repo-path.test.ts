import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { git } from '../helpers/git.js';
import { connectGoalLoop } from '../helpers/mcp-client.js';
import { tempDir } from '../helpers/temp.js';

const SPEC = 'goal_id: bare-attack\nobjective: anything\ntasks:\n  - id: t1\n    title: x\n    verification: "true"\n';

/**
 * A bare-repository layout (HEAD, objects/, refs/ and a config), named nothing like `.git`, as a
 * task or the MCP client can leave in a workspace. Its config runs a program of its choosing on
 * any git that reads it: a git:// proxy (the path is rewritten to git:// by insteadOf) and a
 * credential helper. Each leaves a marker on the host.
 */
async function plantBareLayout(dir: string, marker: string): Promise<void> {
  await mkdir(join(dir, 'objects'), { recursive: true });
  await mkdir(join(dir, 'refs', 'heads'), { recursive: true });
  await writeFile(join(dir, 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(join(dir, 'proxy.sh'), `#!/bin/sh\necho "proxy $*" >> ${marker}\nexit 1\n`);
  await chmod(join(dir, 'proxy.sh'), 0o755);
  await writeFile(
    join(dir, 'config'),
    `[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tgitProxy = ${dir}/proxy.sh\n` +
      `[url "git://attacker.invalid/x"]\n\tinsteadOf = ${dir}\n` +
      `[credential]\n\thelper = "!echo helper >> ${marker}; true"\n`,
  );
}

async function project() {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const marker = join(root, 'PWNED');
  const env = { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'workspaces') };
  return { root, repo, marker, env, args: ['--repo', repo.bare] };
}

describe('goal_start never runs git in a repository path the client chose before the human says yes', () => {
  it('a planted bare layout as `repo` runs nothing, and is refused without a way to ask the human', async () => {
    const p = await project();
    const evil = join(p.root, 'W', 'evil');
    await plantBareLayout(evil, p.marker);
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const refused = await c.call('goal_start', { spec: SPEC, repo: evil });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/not the server's own repository.*this MCP client cannot ask one/s);
    expect(existsSync(p.marker)).toBe(false);
  });

  it('the human is asked before the path is touched, and a no runs nothing', async () => {
    const p = await project();
    const evil = join(p.root, 'W', 'evil');
    await plantBareLayout(evil, p.marker);
    const c = await connectGoalLoop({ env: p.env, args: p.args, human: () => existsSync(p.marker) });
    const refused = await c.call('goal_start', { spec: SPEC, repo: evil });
    expect(refused.isError).toBe(true);
    expect(c.asked).toHaveLength(1);
    expect(c.asked[0]).toContain(evil);
    expect(existsSync(p.marker)).toBe(false);
  });

  it("even with the human's yes, the layout's config is never read by the bot's git", async () => {
    const p = await project();
    const evil = join(p.root, 'W', 'evil');
    await plantBareLayout(evil, p.marker);
    const c = await connectGoalLoop({ env: p.env, args: p.args, human: () => true });
    const r = await c.call('goal_start', { spec: SPEC, repo: evil });
    expect(r.isError).toBe(true); // no branches: nothing to build on
    expect(existsSync(p.marker)).toBe(false);
  });

  it("a path under the bot's own workspaces is refused before anyone is asked", async () => {
    const p = await project();
    const inside = join(p.env.GOAL_LOOP_WORKSPACES, 'sample-0123456789', 'some-goal', 'evil');
    await plantBareLayout(inside, p.marker);
    const c = await connectGoalLoop({ env: p.env, args: p.args, human: () => true });
    const r = await c.call('goal_start', { spec: SPEC, repo: inside });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/goal-loop's own workspaces/);
    expect(c.asked).toEqual([]);
    expect(existsSync(p.marker)).toBe(false);
  });

  it('a server whose own repository is at a detached HEAD does not take its config from there', async () => {
    const p = await project();
    git(p.repo.work, 'checkout', '-q', '--detach');
    await mkdir(join(p.repo.work, '.github'), { recursive: true });
    await writeFile(join(p.repo.work, '.github', 'goal-loop.yml'), 'sandbox: process\n');
    git(p.repo.work, 'add', '.github/goal-loop.yml');
    git(p.repo.work, '-c', 'user.name=a', '-c', 'user.email=b', 'commit', '-qm', 'loosen');
    const c = await connectGoalLoop({ env: p.env, args: ['--repo', p.repo.work] });
    const r = await c.call('goal_start', { spec: SPEC });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/detached HEAD.*--config/s);
    expect(c.stderr()).not.toContain('SANDBOX DISABLED');
  });
});

describe('goal_start and goal_plan read spec files only where the server works', () => {
  const SECRET = 'root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n';

  it('a spec file outside the repository and the working directory is refused without the human, and never echoed', async () => {
    const p = await project();
    const outside = join(await tempDir(), 'shadow');
    await writeFile(outside, SECRET);
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    for (const tool of ['goal_plan', 'goal_start']) {
      const r = await c.call(tool, { goal: outside });
      expect(r.isError).toBe(true);
      expect(r.text).toMatch(/outside the repository and the server's working directory/);
      expect(r.text).not.toContain('20228');
    }
  });

  it('a spec file under the repository is read', async () => {
    const p = await project();
    const inRepo = join(p.repo.work, 'goal.yml');
    await writeFile(inRepo, SPEC);
    const c = await connectGoalLoop({ env: p.env, args: ['--repo', p.repo.work] });
    const plan = await c.ok('goal_plan', { goal: inRepo });
    expect(plan).toContain('goal: bare-attack');
  });
});
