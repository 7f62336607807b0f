import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { BwrapSandbox, BwrapSandboxOptions } from '../../src/sandbox/bwrap-sandbox.js';
import { StartFilter } from '../../src/sandbox/jail-start.js';
import { OutputCapture } from '../../src/sandbox/output-capture.js';
import { ResidentJail } from '../../src/sandbox/resident-jail.js';
import { openInputChannel } from '../../src/sandbox/run-captured.js';
import { processScratch } from '../../src/sandbox/scratch.js';
import { jail, jailRoot, processesOfUid, runIn } from '../helpers/sandbox-jail.js';

// The host side of a resident jail: its error paths, its pool and its requests.
const made: BwrapSandbox[] = [];
afterEach(async () => {
  await Promise.all(made.splice(0).map((s) => s.dispose()));
});

function sandboxOf(opts: BwrapSandboxOptions = {}): BwrapSandbox {
  const sandbox = jail(opts);
  made.push(sandbox);
  return sandbox;
}

/** The channel folders of this process's resident jails (see openResident). */
function channels(): string[] {
  return readdirSync(processScratch())
    .filter((n) => n.startsWith('jail-'))
    .map((n) => join(processScratch(), n));
}

describe('resident jail, host side', () => {
  it('a resident jail that cannot open the output FIFO is ended, and the command runs cold', async () => {
    const { ws } = await jailRoot();
    const sandbox = sandboxOf();
    await runIn(sandbox, ws, 'true');
    const uid = sandbox.uidFor(ws);
    expect(processesOfUid(uid).length).toBeGreaterThan(0);
    // As when the bot is out of descriptors: the FIFO made ahead cannot be opened.
    for (const c of channels()) rmSync(c, { recursive: true, force: true });
    const result = await runIn(sandbox, ws, 'echo cold');
    expect(result).toMatchObject({ exitCode: 0, output: 'cold\n' });
    expect(sandbox.stats.warmHits).toBe(0);
    // The failed jail was ended at once, not left running with no owner.
    expect(sandbox.stats.warmDiscards).toBe(1);
    await sandbox.dispose();
    expect(processesOfUid(uid)).toEqual([]);
  });

  it('where a resident jail cannot run its first command but a cold jail can, every later command runs cold, and the operator is told once', async () => {
    const { ws } = await jailRoot();
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    // Too few processes for the server's cells, enough for a cold jail's command.
    const sandbox = sandboxOf({ limits: { maxProcesses: 4 }, logger });
    for (const n of [1, 2, 3]) expect(await runIn(sandbox, ws, `echo ${n}`)).toMatchObject({ exitCode: 0, output: `${n}\n` });
    expect(sandbox.stats).toMatchObject({ warmStarts: 1, warmHits: 0 });
    expect(warnings.filter((w) => w.includes('resident jails do not work here'))).toHaveLength(1);
  });

  it('runs a request over PIPE_BUF in the resident jail, and one over the cap cold', async () => {
    const { ws } = await jailRoot();
    const sandbox = sandboxOf();
    await runIn(sandbox, ws, 'true');
    const big = 'x'.repeat(20_000);
    const command = `: ${'y'.repeat(30_000)}\nprintf %s "$GOAL_BIG" | wc -c`;
    const result = await runIn(sandbox, ws, command, { env: { GOAL_BIG: big } });
    expect(result).toMatchObject({ exitCode: 0, output: '20000\n' });
    expect(sandbox.stats.warmHits).toBe(1);
    const over = await runIn(sandbox, ws, `: ${'z'.repeat(70_000)}\necho over`);
    expect(over).toMatchObject({ exitCode: 0, output: 'over\n' });
    expect(sandbox.stats.warmHits).toBe(1);
  });

  it('ends a jail whose launcher could not be spawned', async () => {
    const channel = mkdtempSync(join(tmpdir(), 'goal-loop-channel-'));
    const input = openSync('/dev/null', 'w');
    let closed = false;
    const launcher = spawn('/nonexistent/goal-loop-launcher', [], { stdio: ['ignore', 'pipe', 'pipe'] });
    const resident = new ResidentJail({
      key: 'k',
      workspace: channel,
      tree: { workspace: '0:0', git: undefined },
      uid: process.getuid!(),
      gid: process.getgid!(),
      fifoOwner: undefined,
      launcher,
      input,
      channel,
      cgroup: undefined,
      close: async () => {
        closed = true;
        rmSync(channel, { recursive: true, force: true });
      },
    });
    // Ended before the spawn's error was reported (a prewarm disposed at once): no 'exit' ever comes.
    await resident.end();
    expect(closed).toBe(true);
    expect(() => closeSync(input)).toThrow();
  });
});

/**
 * A stand-in for the jail's server (the host side only): reads one request, prints the start
 * marker and `output` to its FIFO, leaves a process holding the FIFO open, reports status 0.
 */
function fakeJail(output: string): { resident: ResidentJail; channel: string } {
  const channel = mkdtempSync(join(tmpdir(), 'goal-loop-channel-'));
  const input = openInputChannel();
  const server = `IFS= read -r -d '' out || exit 0
exec 3>"$1/$out"
printf '\\036goal-loop-jail-started\\036%s' "$2" >&3
sleep 4331 >/dev/null 2>&1 3>&3 &
exec 3>&-
printf '\\036goal-loop-exit 0\\036\\n'
sleep 4332`;
  const launcher = spawn('/bin/bash', ['-c', server, 'fake-server', channel, output], { detached: true, stdio: [input.read, 'pipe', 'pipe'] });
  closeSync(input.read);
  const resident = new ResidentJail({
    key: 'k',
    workspace: channel,
    tree: { workspace: '0:0', git: undefined },
    uid: process.getuid!(),
    gid: process.getgid!(),
    fifoOwner: undefined,
    launcher,
    input: input.write,
    channel,
    cgroup: undefined,
    close: async () => rmSync(channel, { recursive: true, force: true }),
  });
  return { resident, channel };
}

describe('resident jail, one command', () => {
  it('once the status came, no limit ends the command: a timeout while its output drains is no timeout', async () => {
    const { resident, channel } = fakeJail('done\n');
    try {
      const capture = new StartFilter(new OutputCapture());
      // The output stays open past the status (held by a process of the stand-in): the timeout falls in the drain.
      const result = await resident.run({ request: (out) => Buffer.from(`${out}\0`) }, capture, { cwd: channel, timeoutMs: 300 });
      expect(result).toMatchObject({ exitCode: 0, timedOut: false, output: 'done\n' });
      expect(resident.alive).toBe(true);
    } finally {
      await resident.end();
    }
  });
});

describe('resident jail, limits', () => {
  it('a configured CPU limit binds each command, never the server that outlives them', async () => {
    const { ws } = await jailRoot();
    const sandbox = sandboxOf({ limits: { cpuSeconds: 7 } });
    expect((await runIn(sandbox, ws, 'ulimit -t')).output).toBe('7\n');
    const servers = processesOfUid(sandbox.uidFor(ws)).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('goal-loop-server');
      } catch {
        return false;
      }
    });
    expect(servers.length).toBeGreaterThan(0);
    for (const pid of servers) expect(readFileSync(`/proc/${pid}/limits`, 'utf8')).toMatch(/^Max cpu time +unlimited +unlimited/m);
  });
});
