import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';
import { cliProject, parkableFiles } from '../helpers/cli-project.js';
import { tempDir } from '../helpers/temp.js';
import { until } from '../helpers/until.js';

const CACHES = ['warm', 'mirrors', 'setup-cache', 'package-stores'];

describe('goal-loop clean', () => {
  it('usage: exactly one of <goal-id>, --finished, --all; exit 1 with one line', async () => {
    for (const args of [['clean'], ['clean', 'g', '--all'], ['clean', '--finished', '--all']]) {
      const r = await runCli(args, { GOAL_LOOP_WORKSPACES: join(await tempDir(), 'ws') });
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^goal-loop: clean takes one of <goal-id>, --finished or --all\./);
    }
  });

  it('status shows the disk used; clean frees finished workspaces, then the caches, keeps a running goal, and follows no link out', async () => {
    const p = await cliProject(
      `goal_id: stopped\nobjective: x\nlimits: { max_iterations: 1 }\ntasks:\n  - { id: a, title: A, run: echo a > a.txt, verification: "false", max_retries: 5 }\n`,
      parkableFiles(),
    );
    const ws = join(p.root, 'workspaces');
    expect((await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env)).code).toBe(3);
    await writeFile(p.goal, 'goal_id: done\nobjective: x\ntasks:\n  - { id: a, title: A, run: echo a > a.txt, verification: test -f a.txt }\n');
    expect((await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env)).code).toBe(0);
    const [repoDir] = readdirSync(ws).filter((d) => !CACHES.includes(d));
    // The stopped goal keeps its workspace (to go on with); the finished one's is parked.
    expect(existsSync(join(ws, repoDir!, 'stopped', '.git'))).toBe(true);
    expect(existsSync(join(ws, repoDir!, 'done'))).toBe(false);
    // A setup cache entry, as SetupCache writes one.
    const entry = join(ws, 'setup-cache', 'app-0123456789ab', 'a'.repeat(64));
    mkdirSync(join(entry, 'tree', 'node_modules'), { recursive: true });
    writeFileSync(join(entry, 'tree', 'node_modules', 'dep.js'), 'x'.repeat(100_000));
    writeFileSync(join(entry, 'manifest.json'), JSON.stringify({ version: 2, key: 'a'.repeat(64), paths: ['node_modules'], bytes: 102_400 }));
    const store = join(ws, 'package-stores', 'app-0123456789ab-0123456789abcdef0123456789abcdef');
    mkdirSync(join(store, 'store', 'npm'), { recursive: true });
    writeFileSync(join(store, 'store', 'npm', 'tarball'), 'x'.repeat(100_000));
    writeFileSync(join(store, 'bytes'), '102400');
    // Links planted where workspaces and caches live: what they point at is never removed.
    const outside = join(p.root, 'outside');
    mkdirSync(join(outside, 'victim'), { recursive: true });
    writeFileSync(join(outside, 'victim', 'keep.txt'), 'keep');
    symlinkSync(join(outside, 'victim'), join(ws, repoDir!, 'linked'));
    symlinkSync(outside, join(ws, 'elsewhere'));

    const status = await runCli(['status'], p.env);
    expect(status.stdout).toMatch(
      /^disk: workspaces 1 \(\d[\d.]* [KMG]?B\), parked trees 1 \(\d[\d.]* [KMG]?B\), setup cache \(\d[\d.]* [KMG]?B\), package stores \(\d[\d.]* [KMG]?B\), mirrors \(0 B\)/m,
    );

    const finished = await runCli(['clean', '--finished'], p.env);
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stdout).toMatch(/^freed \d[\d.]* [KMG]?B: 1 workspace\n$/);
    expect(existsSync(join(ws, repoDir!, 'stopped'))).toBe(false);
    expect(existsSync(join(ws, repoDir!, 'stopped.trusted-gitconfig'))).toBe(false);

    // A goal that is running keeps its workspace, whatever is asked.
    await writeFile(p.goal, `goal_id: busy\nobjective: x\ntasks:\n  - { id: a, title: a, run: sleep 4, verification: "true" }\n`);
    const busy = startCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    await until(() => existsSync(join(ws, repoDir!, 'busy', '.git')), 'the busy goal cloned');
    const one = await runCli(['clean', 'busy'], p.env);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/^kept \(running\): busy \(/m);
    expect(existsSync(join(ws, repoDir!, 'busy', '.git'))).toBe(true);
    expect((await busy.done).code).toBe(0);

    const all = await runCli(['clean', '--all'], p.env);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^freed \d[\d.]* [KMG]?B: 1 setup cache entry, 0 mirrors, [12] parked trees?, 1 package store\n$/);
    expect(existsSync(entry)).toBe(false);
    expect(existsSync(store)).toBe(false);
    expect(readdirSync(join(ws, 'warm')).flatMap((k) => (k.startsWith('.') ? [] : readdirSync(join(ws, 'warm', k)).filter((n) => /^\d{15}-/.test(n))))).toEqual([]);
    expect(readFileSync(join(outside, 'victim', 'keep.txt'), 'utf8')).toBe('keep');
    expect(existsSync(join(ws, 'elsewhere'))).toBe(true);

    const none = await runCli(['clean', 'nope'], p.env);
    expect(none.stdout).toMatch(/^nothing to clean: no workspace of goal nope under /);
    expect((await runCli(['status'], p.env)).stdout).toMatch(/^disk: workspaces 0 \(0 B\), parked trees 0 \(/m);
  });

  it('the workspace of a run that died (the ledger still says it runs, its lock is free) is cleaned; a live one is kept', async () => {
    const p = await cliProject('goal_id: crashed\nobjective: x\ntasks:\n  - { id: a, title: A, run: sleep 60, verification: "true" }\n');
    const ws = join(p.root, 'workspaces');
    const run = startCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    const goalDir = () => (existsSync(ws) ? readdirSync(ws) : []).filter((d) => !CACHES.includes(d)).map((d) => join(ws, d, 'crashed'))[0];
    await until(() => {
      const dir = goalDir();
      return dir !== undefined && existsSync(join(dir, '.git'));
    }, 'the goal cloned');
    const alive = await runCli(['clean', 'crashed'], p.env);
    expect(alive.stdout).toMatch(/^kept \(running\): crashed/m);
    run.child.kill('SIGKILL'); // no clean-up: the ledger keeps its running state
    await run.done;
    const status = await runCli(['status'], p.env);
    // Killed in its task's baseline verification or in its run step: either way a running state.
    expect(status.stdout).toMatch(/^crashed\s+(EVALUATING|EXECUTING)\s/m);
    const dead = await runCli(['clean', 'crashed'], p.env);
    expect(dead.code, dead.stderr).toBe(0);
    expect(dead.stdout).toMatch(/^freed \d[\d.]* [KMG]?B: 1 workspace\n$/);
    expect(existsSync(goalDir()!)).toBe(false);
  });

  it('--all leaves a cache folder that is a link alone, and what it points at', async () => {
    const root = await tempDir();
    const ws = join(root, 'workspaces');
    const outside = join(root, 'outside');
    const mirror = join(outside, 'app-0123456789ab.git');
    mkdirSync(mirror, { recursive: true });
    writeFileSync(join(mirror, 'goal-loop-mirror.json'), JSON.stringify({ remote: 'https://x/app.git', usedAt: 0, fetchedAt: 0, bytes: 1 }));
    const entry = join(outside, 'app-0123456789ab', 'b'.repeat(64));
    mkdirSync(join(entry, 'tree'), { recursive: true });
    writeFileSync(join(entry, 'manifest.json'), JSON.stringify({ version: 2, key: 'b'.repeat(64), paths: ['x'], bytes: 1 }));
    mkdirSync(join(ws, 'warm'), { recursive: true });
    symlinkSync(outside, join(ws, 'mirrors'));
    symlinkSync(outside, join(ws, 'setup-cache'));
    const store = join(outside, 'stores', 'app-0123456789ab-0123456789abcdef0123456789abcdef');
    mkdirSync(join(store, 'store'), { recursive: true });
    writeFileSync(join(store, 'bytes'), '1');
    symlinkSync(join(outside, 'stores'), join(ws, 'package-stores'));
    const r = await runCli(['clean', '--all'], { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: ws });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^freed 0 B: 0 setup cache entries, 0 mirrors, 0 parked trees, 0 package stores\n$/);
    expect(existsSync(join(store, 'bytes'))).toBe(true);
    expect(existsSync(join(mirror, 'goal-loop-mirror.json'))).toBe(true);
    expect(existsSync(join(entry, 'manifest.json'))).toBe(true);
  });
});
