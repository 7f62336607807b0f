import { existsSync, lstatSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SetupCache } from '../../src/workspace/setup-cache.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';

/** A repository whose setup really installs with npm (offline: a dependency from a folder of the repo), nothing gitignored. */
const FILES = {
  'package.json': JSON.stringify({ name: 'app', version: '1.0.0', private: true, dependencies: { 'left-pad-local': 'file:./vendor/left-pad-local' } }, null, 2),
  'vendor/left-pad-local/package.json': JSON.stringify({ name: 'left-pad-local', version: '1.0.0', main: 'index.js' }),
  'vendor/left-pad-local/index.js': "module.exports = (s, n) => String(s).padStart(n, ' ');\n",
};

/** pnpm (a devDependency of ours, run by path: corepack would fetch it from the network). */
const PNPM = `"${process.execPath}" "${fileURLToPath(new URL('../../node_modules/pnpm/bin/pnpm.cjs', import.meta.url))}"`;
const PNPM_LOCK = `lockfileVersion: '9.0'

settings:
  autoInstallPeers: true
  excludeLinksFromLockfile: false

importers:

  .:
    dependencies:
      left-pad-local:
        specifier: file:./vendor/left-pad-local
        version: file:vendor/left-pad-local

packages:

  left-pad-local@file:vendor/left-pad-local:
    resolution: {directory: vendor/left-pad-local, type: directory}

snapshots:

  left-pad-local@file:vendor/left-pad-local: {}
`;

describe('setup output and checkpoints, with a real npm install', () => {
  it('the first checkpoint holds only the task change: not node_modules, not the lockfile npm created', async () => {
    const h = await goalHarness({ files: FILES });
    const spec = {
      goal_id: 'npm-setup',
      objective: 'use the dependency setup installed',
      tasks: [
        {
          id: 'pad',
          title: 'Pad',
          run: `node -e "require('fs').writeFileSync('padded.txt', require('left-pad-local')('x', 3))"`,
          verification: 'test "$(cat padded.txt)" = "  x"',
        },
      ],
    };
    const result = await h.run(spec, { setup: ['npm install --offline --no-audit --no-fund --loglevel=error'] });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(checkpointCommits(h.repo.bare, 'goal/npm-setup').map((c) => c.task)).toEqual(['pad']);
    const files = git(h.repo.bare, 'show', '--name-only', '--format=', 'goal/npm-setup').split('\n');
    expect(files).toEqual(['padded.txt']);
    // Setup's output is still in the workspace for the tasks that follow.
    expect(existsSync(join(h.workspaceDir, 'node_modules', 'left-pad-local'))).toBe(true);
    expect(existsSync(join(h.workspaceDir, 'package-lock.json'))).toBe(true);
  });

  it('setup gets the host variables the repo config names (a proxy), and the tasks never do', async () => {
    const h = await goalHarness();
    const spec = {
      goal_id: 'proxy',
      objective: 'setup behind a proxy',
      tasks: [{ id: 'check', title: 'Check', run: 'echo "task saw [$HTTPS_PROXY]" > task-env.txt', verification: 'grep -q "task saw \\[\\]" task-env.txt' }],
    };
    const result = await h.run(spec, { setup: ['test "$HTTPS_PROXY" = http://proxy.corp:3128'], setupEnv: { HTTPS_PROXY: 'http://proxy.corp:3128' } });
    expect(result.status, result.stop_reason ?? '').toBe('LOOP_COMPLETE');
    const without = await h.run({ ...spec, goal_id: 'no-proxy' }, { setup: ['test "$HTTPS_PROXY" = http://proxy.corp:3128'] });
    expect(without.status).toBe('ESCALATED');
    expect(without.escalation?.task_id).toBe('setup');
  });

  it('a setup refused a TLS certificate escalates with the hint to name the CA variable in setup_env', async () => {
    const h = await goalHarness();
    const spec = { goal_id: 'cert', objective: 'x', tasks: [{ id: 'a', title: 'A', run: 'true', verification: 'true' }] };
    const result = await h.run(spec, { setup: ['echo "npm error code SELF_SIGNED_CERT_IN_CHAIN" >&2; exit 1'] });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.task_id).toBe('setup');
    expect(result.escalation?.last_error).toMatch(/hint: a TLS certificate was refused.*setup_env: \[NODE_EXTRA_CA_CERTS\]/s);
  });

  it("the setup cache: a second goal on the repository gets setup's output back without running setup; a changed lockfile runs it again", async () => {
    const h = await goalHarness({ files: { ...FILES, 'package-lock.json': '{"lockfileVersion":3}\n' } });
    const setupCache = new SetupCache({ root: join(h.root, 'setup-cache'), maxBytes: 1 << 30 });
    const ws = (id: string) => ({ setupCache, setupInputs: ['package.json', 'package-lock.json'], dir: join(h.root, 'ws', id) });
    const setup = ['npm install --offline --no-audit --no-fund --loglevel=error', 'date +%s%N > node_modules/.installed-at'];
    const goal = (id: string) => ({
      goal_id: id,
      objective: 'o',
      tasks: [{ id: 'use', title: 'Use', run: 'node -e "require(\'left-pad-local\')" && cp node_modules/.installed-at seen.txt', verification: 'test -s seen.txt' }],
    });
    const setupRuns = async (id: string) => (await h.ledger.listAttempts({ repo: h.repo.bare, goalId: id })).filter((a) => a.taskId === 'setup').length;

    const first = await h.run(goal('one'), { setup }, ws('one'));
    expect(first.status, first.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('one')).toBe(2);
    const second = await h.run(goal('two'), { setup }, ws('two'));
    expect(second.status, second.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('two')).toBe(0);
    // The very install of the first goal, put back; and still never checkpointed.
    expect(git(h.repo.bare, 'show', 'goal/two:seen.txt')).toBe(git(h.repo.bare, 'show', 'goal/one:seen.txt'));
    expect(git(h.repo.bare, 'show', '--name-only', '--format=', 'goal/two')).toBe('seen.txt');

    // A new lockfile on main: a new key, so setup runs.
    git(h.repo.work, 'pull', '--quiet', h.repo.bare, 'main');
    await writeFile(join(h.repo.work, 'package-lock.json'), '{"lockfileVersion":3,"changed":true}\n');
    git(h.repo.work, 'commit', '--quiet', '-am', 'new lockfile');
    git(h.repo.work, 'push', '--quiet', h.repo.bare, 'HEAD:main');
    const third = await h.run(goal('three'), { setup }, ws('three'));
    expect(third.status, third.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('three')).toBe(2);
    await setupCache.idle(); // the ready copies it makes in the background
  });

  it('pnpm with its store inside the workspace: the store and node_modules stay out of checkpoints, and the next goal gets them back, links intact', async () => {
    // The incident: pnpm put its store in the workspace and 8,199 files landed on the goal branch.
    const files = { ...FILES, 'pnpm-lock.yaml': PNPM_LOCK };
    const h = await goalHarness({ files });
    const setupCache = new SetupCache({ root: join(h.root, 'setup-cache'), maxBytes: 1 << 30 });
    const ws = (id: string) => ({ setupCache, setupInputs: ['package.json', 'pnpm-lock.yaml'], dir: join(h.root, 'ws', id) });
    const setup = [`${PNPM} install --offline --frozen-lockfile --store-dir .pnpm-store --reporter=silent`];
    const goal = (id: string) => ({
      goal_id: id,
      objective: 'o',
      tasks: [{ id: 'pad', title: 'Pad', run: `node -e "require('fs').writeFileSync('${id}.txt', require('left-pad-local')('x', 3))"`, verification: `test "$(cat ${id}.txt)" = "  x"` }],
    });
    const setupRuns = async (id: string) => (await h.ledger.listAttempts({ repo: h.repo.bare, goalId: id })).filter((a) => a.taskId === 'setup').length;

    const first = await h.run(goal('one'), { setup }, ws('one'));
    expect(first.status, first.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('one')).toBe(1);
    expect(existsSync(join(h.root, 'ws', 'one', '.pnpm-store'))).toBe(true);
    expect(git(h.repo.bare, 'show', '--name-only', '--format=', 'goal/one')).toBe('one.txt');
    await setupCache.idle();

    const second = await h.run(goal('two'), { setup }, ws('two'));
    expect(second.status, second.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('two')).toBe(0);
    expect(git(h.repo.bare, 'show', '--name-only', '--format=', 'goal/two')).toBe('two.txt');
    // pnpm's layout (a relative link into node_modules/.pnpm) came back as a link.
    expect(lstatSync(join(h.root, 'ws', 'two', 'node_modules', 'left-pad-local')).isSymbolicLink()).toBe(true);
    await setupCache.idle();
  });
});
