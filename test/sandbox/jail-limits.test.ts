import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jail, jailRoot, processesOfUid, runIn, sampleProcessCount, sampleRss } from '../helpers/sandbox-jail.js';

const MiB = 1024 * 1024;

// These count every process of the jail uid once run() returned: no jail started ahead for a next command.
const cold = { warm: false } as const;

describe('the jail limits', () => {
  it('holds a fork flood at the process limit, and nothing of it survives', async () => {
    const { ws } = await jailRoot();
    const sandbox = jail({ ...cold, limits: { maxProcesses: 128 } });
    const uid = sandbox.uidFor(ws);
    const sampler = sampleProcessCount(uid);
    const result = await runIn(sandbox, ws, ':(){ :|:& };: ; sleep 600', { timeoutMs: 4000 });
    const max = sampler.stop();
    expect(result.output).toContain('Resource temporarily unavailable');
    // Counted on the host, as the kernel counts them for RLIMIT_NPROC.
    expect(max).toBeLessThanOrEqual(128);
    expect(max).toBeGreaterThan(32); // the flood did run
    expect(processesOfUid(uid)).toEqual([]);
  });

  it('kills 3,000 background sleepers when the command ends: none survives', async () => {
    const { ws } = await jailRoot();
    const sandbox = jail(cold);
    const uid = sandbox.uidFor(ws);
    // 3,000 forks take seconds on a quiet machine and far longer on a loaded one: the command gets room.
    const result = await runIn(sandbox, ws, 'for i in $(seq 3000); do sleep 4242 & done; echo started $(jobs -p | wc -l)', { timeoutMs: 150_000 });
    expect(result.exitCode).toBe(0);
    expect(result.output.trim()).toBe('started 3000');
    expect(processesOfUid(uid)).toEqual([]);
  }, 180_000);

  it('kills a command that never ends at its timeout, with everything it started (nohup, setsid, traps)', async () => {
    const { ws } = await jailRoot();
    const sandbox = jail(cold);
    const uid = sandbox.uidFor(ws);
    const command = "nohup sleep 4243 >/dev/null 2>&1 & setsid sleep 4244 & (trap '' TERM HUP INT; exec sleep 4245) & echo waiting; exec sleep 4246";
    const result = await runIn(sandbox, ws, command, { timeoutMs: 1500 });
    expect(result).toMatchObject({ timedOut: true, exitCode: null, aborted: false });
    expect(result.output).toContain('waiting');
    expect(processesOfUid(uid)).toEqual([]);
  });

  it('kills the whole jail when the run is aborted', async () => {
    const { ws } = await jailRoot();
    const sandbox = jail(cold);
    const uid = sandbox.uidFor(ws);
    const stop = new AbortController();
    const running = runIn(sandbox, ws, 'sleep 4247 & sleep 4248 & wait', { signal: stop.signal });
    while (processesOfUid(uid).length < 3) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    expect(await running).toMatchObject({ aborted: true, exitCode: null });
    expect(processesOfUid(uid)).toEqual([]);
  });

  it('keeps a 400 MB output flood to a bounded head and tail, a bounded log, and barely any bot memory', async () => {
    const { root, ws } = await jailRoot();
    const logPath = join(root, 'logs', 'flood.log');
    const before = process.memoryUsage().rss;
    const rss = sampleRss();
    const result = await runIn(jail(), ws, 'echo FIRST-LINE; yes 0123456789abcdef | head -c 400000000; echo; echo LAST-LINE', { logPath });
    const peak = rss.stop();
    expect(result.exitCode).toBe(0);
    expect(result.outputBytes).toBe(400_000_000 + 'FIRST-LINE\n'.length + '\nLAST-LINE\n'.length);
    expect(result.truncated).toBe(true);
    expect(result.output.length).toBeLessThan(40 * 1024);
    expect(result.output.startsWith('FIRST-LINE\n')).toBe(true);
    expect(result.output.trimEnd().endsWith('LAST-LINE')).toBe(true);
    expect(result.output).toMatch(/\[… \d+ bytes cut; full log: .*flood\.log \(itself cut\) …\]/);
    expect(statSync(logPath).size).toBeLessThan(21 * MiB);
    expect(peak - before).toBeLessThan(32 * MiB);
  });

  it('caps the size of a file a command writes', async () => {
    const { ws } = await jailRoot();
    const result = await runIn(jail({ limits: { maxFileBytes: MiB } }), ws, 'head -c 5000000 /dev/zero > big; echo "exit=$?"');
    expect(result.output).toMatch(/File size limit exceeded/);
    expect(statSync(join(ws, 'big')).size).toBe(MiB);
  });

  it('caps the CPU time of a process', async () => {
    const { ws } = await jailRoot();
    const result = await runIn(jail({ limits: { cpuSeconds: 1 } }), ws, 'while :; do :; done', { timeoutMs: 60_000 });
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(128 + 24); // SIGXCPU
  });

  it("caps the memory of all the command's processes through a cgroup, and says so in the output", async () => {
    const { ws } = await jailRoot();
    const hog = `node -e 'const a = []; for (let i = 0; i < 32; i++) a.push(Buffer.alloc(16 * 1024 * 1024, 1)); console.log("ALLOCATED", a.length * 16, "MiB")'`;
    const roomy = await runIn(jail(cold), ws, hog);
    expect(roomy.output).toContain('ALLOCATED 512 MiB'); // the hog works when memory allows it
    const sandbox = jail({ limits: { memoryBytes: 192 * MiB } });
    expect(sandbox.cgroups).toMatchObject({ available: true });
    const capped = await runIn(sandbox, ws, hog);
    expect(capped.output).not.toContain('ALLOCATED');
    expect(capped.exitCode).not.toBe(0);
    expect(capped.output).toContain('killed by the sandbox memory limit (192 MiB)');
  });
});
