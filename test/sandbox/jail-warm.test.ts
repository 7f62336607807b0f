import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BwrapSandbox, BwrapSandboxOptions } from '../../src/sandbox/bwrap-sandbox.js';
import { jail, jailRoot, processesMatching, processesOfUid, runIn } from '../helpers/sandbox-jail.js';

// The jail of a workspace's next command is started ahead (warm): each command still gets a jail
// of its own, and a warm jail is used only when it is exactly what a cold one would be.
const made: BwrapSandbox[] = [];
afterEach(async () => {
  await Promise.all(made.splice(0).map((s) => s.dispose()));
});

function warmJail(opts: BwrapSandboxOptions = {}): BwrapSandbox {
  const sandbox = jail(opts);
  made.push(sandbox);
  return sandbox;
}

/** Waits until the warm jail of the uid is up (its processes run as the jail uid). */
async function warmUp(uid: number): Promise<void> {
  while (processesOfUid(uid).length === 0) await new Promise((r) => setTimeout(r, 10));
}

const LEAVE = 'echo first > /tmp/left; echo first > "$HOME/left"; sleep 4301 >/dev/null 2>&1 & echo "task=$GOAL_TASK_ID"';
const LOOK = [
  'test -e /tmp/left && echo TMP-LEFT',
  'test -e "$HOME/left" && echo HOME-LEFT',
  'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -q "sleep 430[1]" && echo SLEEPER-SEEN',
  'echo "task=$GOAL_TASK_ID"',
  'exit 7',
].join('; ');

describe('warm jails', () => {
  it('runs the next command in a jail started ahead, still its own: fresh /tmp, home and pid namespace, its env, status and output', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    const first = await runIn(sandbox, ws, LEAVE, { env: { GOAL_TASK_ID: 'one' } });
    expect(first).toMatchObject({ exitCode: 0, output: 'task=one\n' });
    expect(sandbox.stats.warmHits).toBe(0);
    // The background sleeper went with the first command's jail, before run() returned.
    expect(processesMatching('sleep 4301')).toEqual([]);

    const second = await runIn(sandbox, ws, LOOK, { env: { GOAL_TASK_ID: 'two' } });
    expect(sandbox.stats.warmHits).toBe(1);
    expect(second).toMatchObject({ exitCode: 7, timedOut: false, aborted: false, output: 'task=two\n' });

    const third = await runIn(sandbox, ws, 'echo made > out.txt; echo "$GOAL_TASK_ID"', { env: { GOAL_TASK_ID: 'three' } });
    expect(sandbox.stats.warmHits).toBe(2);
    expect(third).toMatchObject({ exitCode: 0, output: 'three\n' });
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('made\n');
  });

  it('hands the workspace over at go: a file the bot wrote while the jail waited is writable by the command', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    await warmUp(sandbox.uidFor(ws));
    writeFileSync(join(ws, 'from-the-bot.txt'), 'bot\n'); // as a checkpoint's git would, as the bot's own user
    const result = await runIn(sandbox, ws, 'echo jail >> from-the-bot.txt && echo WROTE');
    expect(sandbox.stats.warmHits).toBe(1);
    expect(result.output).toBe('WROTE\n');
    expect(readFileSync(join(ws, 'from-the-bot.txt'), 'utf8')).toBe('bot\njail\n');
  });

  it('discards the warm jail when the workspace was made anew at its path; the command runs in the new one', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'echo old > old.txt');
    await warmUp(sandbox.uidFor(ws));
    rmSync(ws, { recursive: true, force: true });
    mkdirSync(ws);
    writeFileSync(join(ws, 'new.txt'), 'new\n');
    const result = await runIn(sandbox, ws, 'cat new.txt; ls; echo made > made.txt');
    expect(sandbox.stats.warmHits).toBe(0);
    expect(sandbox.stats.warmDiscards).toBeGreaterThan(0);
    expect(result).toMatchObject({ exitCode: 0, output: 'new\nnew.txt\n' });
    expect(readFileSync(join(ws, 'made.txt'), 'utf8')).toBe('made\n');
  });

  it('discards the warm jail when .git appeared since it started (it binds .git read-only)', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    await warmUp(sandbox.uidFor(ws));
    mkdirSync(join(ws, '.git'));
    const result = await runIn(sandbox, ws, 'touch .git/planted 2>/dev/null || echo READ-ONLY');
    expect(sandbox.stats.warmHits).toBe(0);
    expect(result.output).toBe('READ-ONLY\n');
    expect(existsSync(join(ws, '.git', 'planted'))).toBe(false);
  });

  it('never uses nor leaves a warm jail for a command with the network or a package store (setup)', async () => {
    const { root, ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    const started = sandbox.stats.warmStarts;
    expect(started).toBeGreaterThan(0);
    const online = await runIn(sandbox, ws, 'echo online', { network: true });
    expect(online.output).toBe('online\n');
    const store = join(root, 'store');
    mkdirSync(store);
    const setup = await runIn(sandbox, ws, 'echo cached > "$npm_config_cache/x" && echo stored', { packageStore: { dir: store, env: { npm_config_cache: store } } });
    expect(setup.output).toBe('stored\n');
    expect(sandbox.stats).toMatchObject({ warmHits: 0, warmStarts: started, warmDiscards: started });
    expect(processesOfUid(sandbox.uidFor(ws))).toEqual([]);
  });

  it('runs the command cold when the warm jail died before it was used', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    const uid = sandbox.uidFor(ws);
    await warmUp(uid);
    for (const pid of processesOfUid(uid)) process.kill(pid, 'SIGKILL');
    const result = await runIn(sandbox, ws, 'echo "cold $GOAL_TASK_ID"', { env: { GOAL_TASK_ID: 'x' } });
    expect(result).toMatchObject({ exitCode: 0, output: 'cold x\n' });
    expect(sandbox.stats.warmHits).toBe(0);
  });

  it('times out and aborts a warm run, counting from when the command was handed over', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true', { timeoutMs: 1000 });
    await warmUp(sandbox.uidFor(ws));
    // The jail waited longer than the timeout: the command still gets all of it.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await runIn(sandbox, ws, 'echo ok', { timeoutMs: 1000 })).toMatchObject({ exitCode: 0, timedOut: false, output: 'ok\n' });
    const timedOut = await runIn(sandbox, ws, 'echo waiting; sleep 4302', { timeoutMs: 1000 });
    expect(timedOut).toMatchObject({ timedOut: true, exitCode: null, output: 'waiting\n' });
    expect(sandbox.stats.warmHits).toBe(2);

    await warmUp(sandbox.uidFor(ws));
    const stop = new AbortController();
    const running = runIn(sandbox, ws, 'echo waiting; sleep 4303', { signal: stop.signal, timeoutMs: 1000 });
    while (processesMatching('sleep 4303').length === 0) await new Promise((r) => setTimeout(r, 10));
    stop.abort();
    expect(await running).toMatchObject({ aborted: true, exitCode: null });
    expect(sandbox.stats.warmHits).toBe(3);
    expect(processesMatching('sleep 430')).toEqual([]);
  });

  it('a warm run is held to the memory limit, and says so', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail({ limits: { memoryBytes: 192 * 1024 * 1024 } });
    await runIn(sandbox, ws, 'true');
    const hog = `node -e 'const a = []; for (let i = 0; i < 32; i++) a.push(Buffer.alloc(16 * 1024 * 1024, 1)); console.log("ALLOCATED")'`;
    const capped = await runIn(sandbox, ws, hog);
    expect(sandbox.stats.warmHits).toBe(1);
    expect(capped.output).not.toContain('ALLOCATED');
    expect(capped.output).toContain('killed by the sandbox memory limit (192 MiB)');
  });

  it('dispose kills the waiting jails: no process of the jail uid is left, and none starts after', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    const uid = sandbox.uidFor(ws);
    await warmUp(uid);
    const started = sandbox.stats.warmStarts;
    await sandbox.dispose();
    expect(processesOfUid(uid)).toEqual([]);
    expect(await runIn(sandbox, ws, 'echo after')).toMatchObject({ exitCode: 0, output: 'after\n' });
    expect(processesOfUid(uid)).toEqual([]);
    expect(sandbox.stats.warmStarts).toBe(started);
  });

  it('an unused warm jail ends on its own after the idle time', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail({ warmIdleMs: 200 });
    await runIn(sandbox, ws, 'true');
    const uid = sandbox.uidFor(ws);
    await warmUp(uid);
    while (processesOfUid(uid).length > 0) await new Promise((r) => setTimeout(r, 20));
    expect(sandbox.stats.warmDiscards).toBe(sandbox.stats.warmStarts);
  });
});
