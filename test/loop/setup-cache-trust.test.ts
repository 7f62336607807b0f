import { lstatSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SetupCache } from '../../src/workspace/setup-cache.js';
import { git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { jail } from '../helpers/sandbox-jail.js';

// The setup cache across goals, with real git and the real jail: what one goal's tasks wrote must
// never become what another goal's setup "restored".

/** Setup runs a script of the repository that is not among setup_inputs (as a Makefile or .npmrc is). */
const FILES = {
  'package.json': '{"name":"app","private":true}\n',
  'setup.sh': 'mkdir -p deps && echo clean > deps/lib.txt\n',
};
const SETUP = ['sh setup.sh'];
const INPUTS = ['package.json'];

const useDeps = (id: string) => ({
  goal_id: id,
  objective: 'use the dependencies setup installed',
  tasks: [{ id: 'use', title: 'Use', run: `cp deps/lib.txt ${id}.txt`, verification: `test -s ${id}.txt` }],
});

async function harness() {
  const h = await goalHarness({ sandbox: jail(), files: FILES });
  const setupCache = new SetupCache({ root: join(h.root, 'setup-cache'), maxBytes: 1 << 30 });
  const ws = (id: string, extra: object = {}) => ({ setupCache, setupInputs: INPUTS, dir: join(h.root, 'ws', id), ...extra });
  const setupRuns = async (id: string) => (await h.ledger.listAttempts({ repo: h.repo.bare, goalId: id })).filter((a) => a.taskId === 'setup').length;
  return { h, setupCache, ws, setupRuns };
}

describe('the setup cache trusts only setup that ran on the base commit', () => {
  it('attack: a goal whose task rewrote a file setup reads, run again on its branch, does not change what a clean goal restores', async () => {
    const { h, setupCache, ws, setupRuns } = await harness();
    const poison = {
      goal_id: 'evil',
      objective: 'rewrite the setup script',
      tasks: [{ id: 'tamper', title: 'Tamper', run: "printf 'mkdir -p deps && echo POISON > deps/lib.txt\\n' > setup.sh", verification: 'grep -q POISON setup.sh' }],
    };
    // The first run has no cache (or its entry was evicted): nothing is restored or kept.
    const first = await h.run(poison, { setup: SETUP }, { dir: join(h.root, 'ws', 'evil') });
    expect(first.status, first.stop_reason ?? '').toBe('LOOP_COMPLETE');
    // Run again with more work (a review's task): setup runs on the goal branch the task wrote.
    // (A rerun with nothing new does no setup at all.)
    const review = { ...poison, tasks: [...poison.tasks, { id: 'review', title: 'Review', run: 'echo ok > review.txt', verification: 'test -f review.txt' }] };
    await h.run(review, { setup: SETUP }, ws('evil'));
    expect(readFileSync(join(h.root, 'ws', 'evil', 'deps', 'lib.txt'), 'utf8')).toBe('POISON\n');
    await setupCache.idle();

    const clean = await h.run(useDeps('clean'), { setup: SETUP }, ws('clean'));
    expect(clean.status, clean.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(git(h.repo.bare, 'show', 'goal/clean:clean.txt')).toBe('clean');
    expect(await setupRuns('clean')).toBe(1); // nothing to restore: setup ran on main
    await setupCache.idle();
    // And what that clean setup kept is what the next goal gets.
    const next = await h.run(useDeps('next'), { setup: SETUP }, ws('next'));
    expect(next.status, next.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('next')).toBe(0);
    expect(git(h.repo.bare, 'show', 'goal/next:next.txt')).toBe('clean');
    await setupCache.idle();
  });

  it("attack: a goal started from another goal's branch keeps nothing in the cache", async () => {
    const { h, setupCache, ws, setupRuns } = await harness();
    const poison = {
      goal_id: 'evil',
      objective: 'rewrite the setup script',
      tasks: [{ id: 'tamper', title: 'Tamper', run: "printf 'mkdir -p deps && echo POISON > deps/lib.txt\\n' > setup.sh", verification: 'grep -q POISON setup.sh' }],
    };
    expect((await h.run(poison, { setup: SETUP }, { dir: join(h.root, 'ws', 'evil') })).status).toBe('LOOP_COMPLETE');
    // A caller (an MCP client, the CLI's --base) names the goal branch as the base of a new goal.
    const stacked = await h.run(useDeps('stacked'), { setup: SETUP }, ws('stacked', { baseBranch: 'goal/evil' }));
    expect(stacked.status, stacked.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(git(h.repo.bare, 'show', 'goal/stacked:stacked.txt')).toBe('POISON');
    await setupCache.idle();

    const clean = await h.run(useDeps('clean'), { setup: SETUP }, ws('clean'));
    expect(clean.status, clean.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(git(h.repo.bare, 'show', 'goal/clean:clean.txt')).toBe('clean');
    expect(await setupRuns('clean')).toBe(1);
    await setupCache.idle();
  });

  it('attack: what setup made on another base branch (--base feature-x, a base an MCP client chose) is never restored for a goal on main', async () => {
    const { h, setupCache, ws, setupRuns } = await harness();
    // Anyone who can push a branch (or a base a human approved once) makes the setup script
    // differ from main's, while setup_inputs (package.json) stay the same blobs.
    const work = h.repo.work;
    git(work, 'checkout', '-q', '-b', 'feature-x');
    writeFileSync(join(work, 'setup.sh'), 'mkdir -p deps && echo POISON > deps/lib.txt\n');
    git(work, '-c', 'user.name=a', '-c', 'user.email=a@example.com', 'commit', '-qam', 'another setup');
    git(work, 'push', '-q', 'origin', 'feature-x');
    const feature = await h.run(useDeps('feature'), { setup: SETUP }, ws('feature', { baseBranch: 'feature-x' }));
    expect(feature.status, feature.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(git(h.repo.bare, 'show', 'goal/feature:feature.txt')).toBe('POISON');
    await setupCache.idle();

    const clean = await h.run(useDeps('clean'), { setup: SETUP }, ws('clean'));
    expect(clean.status, clean.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(git(h.repo.bare, 'show', 'goal/clean:clean.txt')).toBe('clean');
    expect(await setupRuns('clean')).toBe(1); // feature-x's entry is not main's
    await setupCache.idle();
    // Each base keeps its own entry: main's explicitly named, and feature-x's.
    const main = await h.run(useDeps('main'), { setup: SETUP }, ws('main', { baseBranch: 'main' }));
    expect(main.status, main.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('main')).toBe(0);
    expect(git(h.repo.bare, 'show', 'goal/main:main.txt')).toBe('clean');
    const again = await h.run(useDeps('again'), { setup: SETUP }, ws('again', { baseBranch: 'feature-x' }));
    expect(again.status, again.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('again')).toBe(0);
    expect(git(h.repo.bare, 'show', 'goal/again:again.txt')).toBe('POISON');
    await setupCache.idle();
  });

  it('attack: set-uid and set-gid bits setup left come back stripped, in the cache and in the next goal', async () => {
    const { h, setupCache, ws, setupRuns } = await harness();
    const setup = ['mkdir -p deps/shared && echo clean > deps/lib.txt && printf "#!/bin/sh\\necho hi\\n" > deps/tool && chmod 6755 deps/tool && chmod 2775 deps/shared'];
    const one = await h.run(useDeps('one'), { setup }, ws('one'));
    expect(one.status, one.stop_reason ?? '').toBe('LOOP_COMPLETE');
    // The jail could set them (its user owns the files): the attack is real.
    expect(lstatSync(join(h.root, 'ws', 'one', 'deps', 'tool')).mode & 0o6000).toBe(0o6000);
    await setupCache.idle();
    const repoDir = join(h.root, 'setup-cache', readdirSync(join(h.root, 'setup-cache'))[0]!);
    const entries = readdirSync(repoDir).filter((n) => /^[0-9a-f]{64}$/.test(n));
    expect(entries).toHaveLength(1);
    const tree = join(repoDir, entries[0]!, 'tree');
    expect(lstatSync(join(tree, 'deps', 'tool')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(join(tree, 'deps', 'shared')).mode & 0o7777).toBe(0o775);

    const two = await h.run(useDeps('two'), { setup }, ws('two'));
    expect(two.status, two.stop_reason ?? '').toBe('LOOP_COMPLETE');
    expect(await setupRuns('two')).toBe(0);
    expect(lstatSync(join(h.root, 'ws', 'two', 'deps', 'tool')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(join(h.root, 'ws', 'two', 'deps', 'shared')).mode & 0o7777).toBe(0o775);
    await setupCache.idle();
  });
});
