import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BwrapSandbox, BwrapSandboxOptions } from '../../src/sandbox/bwrap-sandbox.js';
import { discoverToolchain } from '../../src/sandbox/toolchain.js';
import { jail, jailRoot, processesMatching, processesOfUid, runIn } from '../helpers/sandbox-jail.js';

// A workspace's run steps and verifications run in one resident jail, each in a cell of its own
// made ahead by the jail's server: what a cold jail gives a command, a cell gives it too.
const made: BwrapSandbox[] = [];
afterEach(async () => {
  await Promise.all(made.splice(0).map((s) => s.dispose()));
});

function warmJail(opts: BwrapSandboxOptions = {}): BwrapSandbox {
  const sandbox = jail(opts);
  made.push(sandbox);
  return sandbox;
}

/** Waits until the resident jail of the uid is up (its processes run as the jail uid). */
async function warmUp(uid: number): Promise<void> {
  while (processesOfUid(uid).length === 0) await new Promise((r) => setTimeout(r, 10));
}

const JAIL_PROCESS = /bwrap|goal-loop-server|unshare|goal-loop-gate|goal-loop-cell/;

const LEAVE = 'echo first > /tmp/left; echo first > "$HOME/left"; sleep 4301 >/dev/null 2>&1 & echo "task=$GOAL_TASK_ID"';
const LOOK = [
  'test -e /tmp/left && echo TMP-LEFT',
  'test -e "$HOME/left" && echo HOME-LEFT',
  'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " " | grep -q "sleep 430[1]" && echo SLEEPER-SEEN',
  'echo "task=$GOAL_TASK_ID"',
  'exit 7',
].join('; ');

describe('resident jails', () => {
  it('runs the next command in the resident jail, in a cell of its own: fresh /tmp, home and pid namespace, its env, status and output', async () => {
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

  it('binds again, in every cell, a workspace and a toolchain file the jail keeps under /tmp, whatever their names hold', async () => {
    const { root } = await jailRoot();
    // A space, a backslash and a `#`: each is an escape in the cells' mount table.
    const ws = join(root, 'a work\\space #1');
    mkdirSync(ws);
    const tool = join(root, 'tools', 'say hi');
    mkdirSync(join(root, 'tools'));
    writeFileSync(tool, '#!/bin/sh\necho "tool ran"\n', { mode: 0o755 });
    const base = discoverToolchain();
    const sandbox = warmJail({ toolchain: { ...base, roBinds: [...base.roBinds, tool] } });
    // Passed as a task's own variable (sandboxEnvironment keeps GOAL_* ones).
    const env = { GOAL_TOOL: tool };
    expect(await runIn(sandbox, ws, 'echo one > f; echo left > /tmp/left; "$GOAL_TOOL"', { env })).toMatchObject({ exitCode: 0, output: 'tool ran\n' });
    const second = await runIn(sandbox, ws, 'cat f; echo two >> f; "$GOAL_TOOL"; echo "$PWD"; test -e /tmp/left && echo TMP-LEFT', { env });
    expect(sandbox.stats.warmHits).toBe(1);
    // Around what is kept, /tmp is fresh: the first command's file is gone.
    expect(second).toMatchObject({ exitCode: 1, output: `one\ntool ran\n${ws}\n` });
    expect(readFileSync(join(ws, 'f'), 'utf8')).toBe('one\ntwo\n');
    expect(await runIn(sandbox, ws, 'echo x > "$GOAL_TOOL"', { env })).toMatchObject({ exitCode: 1 });
    expect(readFileSync(tool, 'utf8')).toContain('tool ran');
  });

  it('hands the workspace over at each command: a file the bot wrote while the jail waited is writable by the command', async () => {
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

  it('ends the resident jail when the workspace was made anew at its path; the command runs in the new one', async () => {
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

  it('ends the resident jail when .git appeared since it started (it binds .git read-only)', async () => {
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

  it('never uses nor leaves a resident jail for a command with the network or a package store (setup)', async () => {
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

  it('starts a new resident jail when the waiting one died before it was used', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    const uid = sandbox.uidFor(ws);
    await warmUp(uid);
    for (const pid of processesOfUid(uid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone meanwhile: a cell's mount or setpriv that just ended */
      }
    }
    const result = await runIn(sandbox, ws, 'echo "cold $GOAL_TASK_ID"', { env: { GOAL_TASK_ID: 'x' } });
    expect(result).toMatchObject({ exitCode: 0, output: 'cold x\n' });
    expect(sandbox.stats.warmHits).toBe(0);
  });

  it('times out and aborts a command in the resident jail, counting from when it was handed over; the jail goes with it and a new one is started', async () => {
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

  it('a command in the resident jail is held to the memory limit, and says so', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail({ limits: { memoryBytes: 192 * 1024 * 1024 } });
    await runIn(sandbox, ws, 'true');
    const hog = `node -e 'const a = []; for (let i = 0; i < 32; i++) a.push(Buffer.alloc(16 * 1024 * 1024, 1)); console.log("ALLOCATED")'`;
    const capped = await runIn(sandbox, ws, hog);
    expect(sandbox.stats.warmHits).toBe(1);
    expect(capped.output).not.toContain('ALLOCATED');
    expect(capped.output).toContain('killed by the sandbox memory limit (192 MiB)');
  });

  it('dispose ends the resident jails: no process of the jail uid is left, and none starts after', async () => {
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

  it('an unused resident jail ends on its own after the idle time', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail({ warmIdleMs: 200 });
    await runIn(sandbox, ws, 'true');
    const uid = sandbox.uidFor(ws);
    await warmUp(uid);
    while (processesOfUid(uid).length > 0) await new Promise((r) => setTimeout(r, 20));
    expect(sandbox.stats.warmDiscards).toBe(sandbox.stats.warmStarts);
  });

  it('a command cannot reach the server, the waiting cell or its own start: it sees its own processes only, and killing all it can ends only its own cell', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    const uid = sandbox.uidFor(ws);
    const look = await runIn(sandbox, ws, 'ls /proc | grep -c "^[0-9]"; cat /proc/[0-9]*/cmdline | tr "\\0" " " | grep -c goal-loop-[s]erver; kill -9 -1 2>/dev/null; echo after');
    expect(look.output).toMatch(/^[1-5]\n0\nafter\n$/);
    expect(sandbox.stats.warmHits).toBe(1);
    // The same jail (its server untouched) runs the next command.
    const pidsBefore = processesOfUid(uid).length;
    expect(pidsBefore).toBeGreaterThan(0);
    expect(await runIn(sandbox, ws, 'echo next')).toMatchObject({ exitCode: 0, output: 'next\n' });
    expect(sandbox.stats).toMatchObject({ warmHits: 2, warmStarts: 1, warmDiscards: 0 });
  });

  it('a command killed by a signal reports that status, cannot kill its pid 1, and the jail runs the next one', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    expect(await runIn(sandbox, ws, 'kill -TERM $$; echo never')).toMatchObject({ exitCode: 143, output: '' });
    // The cell's pid 1 (its gate) ignores signals from inside its namespace, as bwrap's does in a cold jail.
    expect(await runIn(sandbox, ws, 'kill -9 1 2>/dev/null; echo still')).toMatchObject({ exitCode: 0, output: 'still\n' });
    expect(await runIn(sandbox, ws, 'echo fine')).toMatchObject({ exitCode: 0, output: 'fine\n' });
    // As in a cold jail, nothing but the command's own output: no word from the gate about how it ended.
    expect(await runIn(sandbox, ws, 'echo killed; kill -KILL $$')).toMatchObject({ exitCode: 137, output: 'killed\n' });
    expect(sandbox.stats).toMatchObject({ warmHits: 3, warmStarts: 1 });
  });

  it('a request a command writes into its own cell, or a status it prints, changes nothing: the next command runs what the bot sent', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    // A whole forged request for "exit 0", written into every pipe the command can reach.
    const forged = "printf 'out-99\\0unlimited\\0unlimited\\0exit 0\\00\\0'";
    const attack = [`${forged} > /proc/1/fd/0 2>/dev/null`, `for f in /proc/[0-9]*/fd/*; do ${forged} > "$f" 2>/dev/null; done`, "printf '\\036goal-loop-exit 0\\036\\n'", 'exit 5'].join('; ');
    const forging = await runIn(sandbox, ws, attack);
    expect(forging.exitCode).toBe(5);
    const next = await runIn(sandbox, ws, 'echo verification ran; exit 7');
    expect(next).toMatchObject({ exitCode: 7, output: 'verification ran\n' });
    expect(await runIn(sandbox, ws, 'echo third')).toMatchObject({ exitCode: 0, output: 'third\n' });
  });

  it('every process a command started is gone when run() returns: background, new session, double fork', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    const leaving = 'sleep 4311 >/dev/null 2>&1 & setsid sleep 4312 >/dev/null 2>&1 & (sleep 4313 >/dev/null 2>&1 &) ; nohup sleep 4314 >/dev/null 2>&1 & echo left';
    expect(await runIn(sandbox, ws, leaving)).toMatchObject({ exitCode: 0, output: 'left\n' });
    expect(processesMatching('sleep 431')).toEqual([]);
    // Only the jail's own processes are left: bwrap, the server and the cells waiting for their request.
    const uid = sandbox.uidFor(ws);
    for (const pid of processesOfUid(uid)) {
      let cmd: string;
      let stat: string;
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        continue; // gone meanwhile
      }
      if (JAIL_PROCESS.test(cmd)) continue;
      // A zombie has no command line: it runs nothing, and the jail process that made it (a next
      // cell's mount, say) reaps it. A command's processes never end as zombies: the kernel reaps
      // a cell's pid namespace before its status is told. A next cell's preparation (its mount or
      // mkdir) is a child of the cell's first step; a command's processes descend from its gate.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      let parent: string;
      try {
        parent = readFileSync(`/proc/${ppid}/cmdline`, 'utf8');
      } catch {
        continue; // reaped meanwhile
      }
      if (cmd === '' && state === 'Z') expect(parent).toMatch(JAIL_PROCESS);
      else expect({ cmd, parent }).toMatchObject({ cmd: expect.stringMatching(/^\/usr\/bin\/(mount|mkdir)\0/), parent: expect.stringMatching(/goal-loop-cell/) });
    }
  });

  it('gives each command fresh /dev/shm and IPC objects, no capability, no user namespace, no mount, and a channel it cannot list or write', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    const leaving = await runIn(sandbox, ws, 'echo x > /dev/shm/left; echo x > /tmp/left; ipcmk -M 4096 >/dev/null && ipcmk -Q >/dev/null && ipcs -m -q | grep -c "^0x"');
    expect(leaving.output).toBe('2\n');
    const probe = [
      'test -e /dev/shm/left && echo SHM-LEFT',
      'ipcs -m -q | grep -q "^0x" && echo IPC-LEFT',
      'test -e /tmp/left && echo TMP-LEFT',
      'grep -E "^Cap(Eff|Prm|Bnd|Amb)" /proc/self/status | tr -d "\\t" | tr "\\n" " "',
      'echo',
      'unshare -U true 2>/dev/null && echo USERNS',
      'mount -t tmpfs x /tmp 2>/dev/null && echo MOUNTED',
      'ls /run/goal-loop >/dev/null 2>&1 && echo LISTED',
      'touch /run/goal-loop/planted 2>/dev/null && echo PLANTED',
      'echo done',
    ].join('; ');
    const result = await runIn(sandbox, ws, probe);
    expect(sandbox.stats.warmHits).toBe(1);
    expect(result.output).toBe(
      'CapInh:0000000000000000 CapPrm:0000000000000000 CapEff:0000000000000000 CapBnd:0000000000000000 CapAmb:0000000000000000 \ndone\n'.replace('CapInh:0000000000000000 ', ''),
    );
  });

  it('gives each command its own IPC namespace: SysV objects a run step made, and the memory they pin, are gone for the next command', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail({ limits: { memoryBytes: 192 * 1024 * 1024 } });
    await runIn(sandbox, ws, 'true');
    // 150 MiB of SysV shared memory, touched (charged to the jail's memory cgroup), no process attached.
    const pin = [
      'ipcmk -Q >/dev/null && ipcmk -S 1 >/dev/null',
      `perl -e '$n = 150 * 1024 * 1024; $c = 1024 * 1024; $id = shmget(0x4242, $n, 01600) // die; $s = "x" x $c; for ($o = 0; $o < $n; $o += $c) { shmwrite($id, $s, $o, $c) or die } print "PINNED\\n"'`,
    ].join(' && ');
    expect(await runIn(sandbox, ws, pin)).toMatchObject({ exitCode: 0, output: 'PINNED\n' });
    const verification = `ipcs | grep -c "^0x"; node -e 'const a = []; for (let i = 0; i < 8; i++) a.push(Buffer.alloc(8 * 1024 * 1024, 1)); console.log("PASSED")'`;
    expect(await runIn(sandbox, ws, verification)).toMatchObject({ exitCode: 0, output: '0\nPASSED\n' });
    expect(sandbox.stats.warmHits).toBe(2);
  });

  // Each cell has a user namespace of its own: the kernel keeps one user keyring per uid and user
  // namespace, so a key a run step adds goes with its cell, as it went with a cold jail. (The key
  // itself is collected later, by the kernel's key GC: until then /proc/keys may still list it, in a
  // cold jail too, but only its owner's keyring could reach it, and that keyring is gone.)
  it('a key a command adds to its user keyring is out of reach for the next command', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    await runIn(sandbox, ws, 'true');
    const [addKey, keyctl] = process.arch === 'arm64' ? [217, 219] : [248, 250];
    // KEY_SPEC_USER_KEYRING is -4; KEYCTL_SEARCH is 10, KEYCTL_READ 11.
    const search = `syscall(${keyctl}, 10, -4, $t, $d, 0)`;
    const plant = `perl -e 'my ($t, $d, $v) = ("user", "planted-by-run-step", "forged"); my $k = syscall(${addKey}, $t, $d, $v, length $v, -4); $k > 0 or die "$!"; ${search} == $k or die "not found: $!"; print "$k\\n"'`;
    const planted = await runIn(sandbox, ws, plant);
    expect(planted).toMatchObject({ exitCode: 0, output: expect.stringMatching(/^\d+\n$/) });
    const serial = planted.output.trim();
    const reach = `perl -e 'my ($t, $d, $b) = ("user", "planted-by-run-step", "\\0" x 64); print ${search} < 0 ? "search: $!\\n" : "FOUND\\n"; print syscall(${keyctl}, 11, ${serial}, $b, 64) < 0 ? "read: failed\\n" : "READ $b\\n"'`;
    expect(await runIn(sandbox, ws, reach)).toMatchObject({ exitCode: 0, output: 'search: Required key not available\nread: failed\n' });
  });

  it('holds each command to its own CPU limit, however long the jail lives', async () => {
    const { ws } = await jailRoot();
    const sandbox = warmJail();
    expect((await runIn(sandbox, ws, 'ulimit -t', { timeoutMs: 5_000 })).output.trim()).toBe(String(5 * availableParallelism()));
    expect((await runIn(sandbox, ws, 'ulimit -t', { timeoutMs: 60_000 })).output.trim()).toBe(String(60 * availableParallelism()));
    expect(sandbox.stats.warmHits).toBe(1);
  });
});
