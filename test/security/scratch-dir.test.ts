import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { CLI } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

// The bot runs as BOT; OTHER is another user of the same shared, sticky TMPDIR, who leaves
// directories the bot cannot remove and may pre-create the paths the bot will use.
const BOT = 4_242_001;
const OTHER = 4_242_002;
/** Above the kernel's largest pid_max: never a live process. */
const DEAD_PID = 4_194_305;
/** This checkout, built; BOT sees it at `<host root>/checkout` (see runAsBot). */
const CHECKOUT = fileURLToPath(new URL('../..', import.meta.url));
const SCRATCH = fileURLToPath(new URL('../../dist/src/sandbox/scratch.js', import.meta.url));
/** A file of this checkout, as BOT sees it from `root`. */
const seenFrom = (root: string, path: string) => join(root, 'checkout', relative(CHECKOUT, path));

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `argv` as BOT (real uid and gid, no groups) with a minimal environment. The checkout (its
 * dist/ and node_modules) is bound at `<root>/checkout`, in a mount namespace of its own: BOT may
 * not be able to traverse the folder the checkout is in (under /root, or a 0700 `mktemp -d`).
 */
function runAsBot(root: string, argv: string[], env: Record<string, string>, cwd: string): Promise<Ran> {
  mkdirSync(join(root, 'checkout'), { recursive: true });
  const asBot = ['setpriv', `--reuid=${BOT}`, `--regid=${BOT}`, '--clear-groups', '--', ...argv];
  const bind = 'mount --bind "$1" "$2" && shift 2 && exec "$@"';
  const child = spawn('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', bind, 'sh', CHECKOUT, join(root, 'checkout'), ...asBot], {
    cwd,
    env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', LOG_LEVEL: 'warn', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** A world-traversable root with a shared sticky TMPDIR and a home owned by BOT. */
async function host() {
  const root = await tempDir('goal-loop-scratch-test-');
  chmodSync(root, 0o755);
  const shared = join(root, 'tmp');
  mkdirSync(shared);
  chmodSync(shared, 0o1777);
  const home = join(root, 'home');
  mkdirSync(home);
  chownSync(home, BOT, BOT);
  return { root, shared, home };
}

/** A directory owned by `uid` with a file inside, so that only `uid` (or root) can remove it. */
function ownedDir(path: string, uid: number, mode = 0o755): string {
  mkdirSync(path, { recursive: true });
  writeFileSync(join(path, 'file'), 'x');
  chownSync(join(path, 'file'), uid, uid);
  chownSync(path, uid, uid);
  chmodSync(path, mode);
  return path;
}

// Takes the process's scratch directory, writes a file in it, and reports where it landed.
const probe = (scratch: string) => `
import(${JSON.stringify(scratch)}).then((m) => {
  const fs = require('fs'), path = require('path');
  const file = m.scratchPath('probe');
  fs.writeFileSync(file, 'mine');
  const dir = fs.lstatSync(m.processScratch()), parent = fs.lstatSync(path.dirname(m.processScratch()));
  console.log(JSON.stringify({ real: fs.realpathSync(file), dirUid: dir.uid, dirIsDir: dir.isDirectory(), parentUid: parent.uid, parentIsDir: parent.isDirectory(), parentMode: parent.mode & 0o7777 }));
});`;

describe('the scratch directory in a shared TMPDIR', () => {
  it("a run succeeds next to another user's stale scratch directory and a symlink planted at its own path", async () => {
    const { root, shared, home } = await host();
    const foreignStale = ownedDir(join(shared, `goal-loop-run-${DEAD_PID}-xyz`), OTHER);
    const ownLegacy = ownedDir(join(shared, `goal-loop-run-${DEAD_PID}-abc`), BOT);
    const trap = ownedDir(join(root, 'trap'), OTHER, 0o777);
    symlinkSync(trap, join(shared, `goal-loop-${BOT}`));

    const repo = await createSampleRepo(join(root, 'sample'));
    const goal = join(root, 'goal.yml');
    writeFileSync(goal, 'goal_id: scratch-ok\nobjective: one file\ntasks:\n  - id: one\n    title: First file\n    run: echo 1 > one.txt\n    verification: test -f one.txt\n');
    for (const p of [join(root, 'sample'), ...walk(join(root, 'sample'))]) chownSync(p, BOT, BOT);

    const r = await runAsBot(
      root,
      [process.execPath, seenFrom(root, CLI), 'run', '--repo', repo.bare, '--goal', goal, '--agent', 'scripted', '--json'],
      { HOME: home, TMPDIR: shared, GOAL_LOOP_DB: join(home, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(home, 'workspaces') },
      home,
    );
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ goal_id: 'scratch-ok', status: 'LOOP_COMPLETE', success: true });
    expect(existsSync(join(foreignStale, 'file'))).toBe(true); // not ours: left alone
    expect(existsSync(ownLegacy)).toBe(false); // ours, from a dead process: swept
    expect(readdirSync(trap)).toEqual(['file']); // nothing written through the symlink
    expect(lstatSync(join(shared, `goal-loop-${BOT}`)).isSymbolicLink()).toBe(true);
  });

  it('sweeps its own dead runs, and never writes into a per-user directory another user made', async () => {
    const { root, shared, home } = await host();
    const mine = join(shared, `goal-loop-${BOT}`);
    mkdirSync(mine);
    chownSync(mine, BOT, BOT);
    const deadRun = ownedDir(join(mine, `run-${DEAD_PID}-abc`), BOT);
    const first = await runAsBot(root, [process.execPath, '-e', probe(seenFrom(root, SCRATCH))], { TMPDIR: shared }, home);
    expect(first.stderr).toBe('');
    const own = JSON.parse(first.stdout);
    expect(own.real.startsWith(`${mine}/run-`)).toBe(true);
    expect(own).toMatchObject({ parentUid: BOT, parentIsDir: true });
    expect(own.parentMode & 0o022).toBe(0);
    expect(existsSync(deadRun)).toBe(false);

    const { root: root2, shared: shared2, home: home2 } = await host();
    const squatted = ownedDir(join(shared2, `goal-loop-${BOT}`), OTHER, 0o777);
    const second = await runAsBot(root2, [process.execPath, '-e', probe(seenFrom(root2, SCRATCH))], { TMPDIR: shared2 }, home2);
    expect(second.stderr).toBe('');
    const out = JSON.parse(second.stdout);
    expect(out.real.startsWith(`${shared2}/`)).toBe(true);
    expect(out.real.startsWith(`${squatted}/`)).toBe(false);
    expect(out).toMatchObject({ dirUid: BOT, dirIsDir: true });
    expect(readdirSync(squatted)).toEqual(['file']);
  });
});

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    out.push(p);
    if (e.isDirectory()) out.push(...walk(p));
  }
  return out;
}
