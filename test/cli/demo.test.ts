import { execFile } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliInvocation } from '../../src/cli/invocation.js';
import { CLI, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

/** A printed command line, run by a shell as a user would paste it: without the demo's environment. */
function shell(command: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', command], { env, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The command after a label of the demo's closing lines (`Each attempt:   …`). */
function printed(stdout: string, label: string): string {
  const line = stdout.split('\n').find((l) => l.startsWith(`${label}:`));
  if (!line) throw new Error(`the demo printed no "${label}:" line:\n${stdout}`);
  return line.slice(label.length + 1).trim();
}

describe('goal-loop demo', () => {
  it('runs the demo goal, and the commands it prints work as printed, from a shell without its environment', { timeout: 240_000 }, async () => {
    const home = await tempDir();
    // `goal-loop` on the PATH, as `npm install -g` links it.
    const bin = join(home, 'bin');
    await mkdir(bin);
    await symlink(CLI, join(bin, 'goal-loop'));
    chmodSync(CLI, 0o755); // as npm makes a bin executable when it links it
    const PATH = `${bin}${delimiter}${dirname(process.execPath)}${delimiter}/usr/bin${delimiter}/bin`;
    const user = { PATH, HOME: home, XDG_STATE_HOME: join(home, 'state'), XDG_CACHE_HOME: join(home, 'cache'), NO_COLOR: '1', LOG_LEVEL: 'warn' as const };
    // The user's own ledger settings do not reach the demo: it keeps its own.
    const r = await runCli(['demo'], { ...user, DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none', GOAL_LOOP_DB: join(home, 'mine.db') });
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/LOOP_COMPLETE 4\/4 tasks/);

    const attempts = printed(r.stdout, 'Each attempt');
    expect(attempts).toMatch(/^GOAL_LOOP_DB=\S+ goal-loop logs demo-slugify$/);
    const logs = await shell(attempts, user);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/slug-tests/);
    expect(logs.stdout).toMatch(/slug-tests · attempt 2/);

    const status = await shell(printed(r.stdout, 'The goal'), user);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^demo-slugify {2}LOOP_COMPLETE {2}4\/4 tasks/m);

    const look = await shell(printed(r.stdout, 'Look at them'), user);
    expect(look.code, look.stderr).toBe(0);
    expect(look.stdout).toMatch(/slug-cli: Add a slug command-line entry point/);

    // The user's ledger got nothing; the demo's folder goes with the command it names.
    expect(existsSync(join(home, 'mine.db'))).toBe(false);
    expect(existsSync(join(home, 'state'))).toBe(false);
    const cleanup = /; when done: (rm -rf (\S+))$/m.exec(r.stdout);
    expect(cleanup).not.toBeNull();
    expect(existsSync(cleanup![2]!)).toBe(true);
    expect((await shell(cleanup![1]!, user)).code).toBe(0);
    expect(existsSync(cleanup![2]!)).toBe(false);
  });

  it('names the CLI as the shell finds it: goal-loop when that is this CLI on the PATH, else node and its path', async () => {
    const root = await tempDir();
    const mine = join(root, 'mine');
    const other = join(root, 'other');
    const npmBin = join(root, 'project', 'node_modules', '.bin');
    for (const d of [mine, other, npmBin]) await mkdir(d, { recursive: true });
    await symlink(CLI, join(mine, 'goal-loop'));
    await symlink(CLI, join(npmBin, 'goal-loop'));
    await symlink('/bin/true', join(other, 'goal-loop'));
    chmodSync(CLI, 0o755);
    const path = (...dirs: string[]) => ({ PATH: dirs.join(delimiter) });
    expect(cliInvocation(path(mine, '/usr/bin'), CLI)).toBe('goal-loop');
    // Another goal-loop comes first: the shell would run that one.
    expect(cliInvocation(path(other, mine), CLI)).toBe(`node ${CLI}`);
    // npm puts node_modules/.bin on the PATH of its scripts and npx only, not of the user's shell.
    expect(cliInvocation(path(npmBin, '/usr/bin'), CLI)).toBe(`node ${CLI}`);
    expect(cliInvocation({}, CLI)).toBe(`node ${CLI}`);
    // A file the shell cannot run is passed over, as the shell passes over it.
    const plain = join(root, 'plain');
    await mkdir(plain);
    await writeFile(join(plain, 'goal-loop'), '#!/bin/sh\n');
    expect(cliInvocation(path(plain, mine), CLI)).toBe('goal-loop');
    expect(cliInvocation(path(mine), '/a path/with spaces/main.js')).toBe(`node '/a path/with spaces/main.js'`);
  });
});
