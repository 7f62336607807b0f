import { chmodSync, existsSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jail, jailRoot, nodeScript, processesOfUid, runIn, sampleProcessCount } from '../helpers/sandbox-jail.js';

// `direct` is the jail of a bot that does not run as root (e.g. a container started with
// `--user`): one unprivileged bwrap as the bot's uid. Running as root here, the test starts it
// as the jail uid, which is the same code path. Unlike `nested`, the workspace must then be
// reachable by that uid: mkdtemp makes 0700 directories.
async function reachableRoot() {
  const dirs = await jailRoot();
  chmodSync(dirs.root, 0o755);
  return dirs;
}
describe('the direct jail (a non-root bot)', () => {
  it('isolates the environment, the network and the filesystem', async () => {
    process.env.GOAL_LOOP_DIRECT_SECRET = 'direct-secret-value';
    const server = createServer((s) => s.on('error', () => undefined).end('hello\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { root, ws } = await reachableRoot();
      const sandbox = jail({ jailMode: 'direct' });
      expect(sandbox.mode).toBe('direct');
      const port = (server.address() as AddressInfo).port;
      const probe = [
        'id -u',
        'env',
        `${nodeScript(`require('net').connect(${port}, '127.0.0.1').on('data', () => console.log('CONNECTED')).on('error', (e) => console.log(e.code))`)}`,
        `echo pwned > ${join(root, 'outside')}`,
        'echo ok > inside',
        'grep -E "^(CapEff|NoNewPrivs):" /proc/self/status',
        'unshare -U true && echo USERNS-OK',
        'echo end',
      ].join('; ');
      const result = await runIn(sandbox, ws, probe);
      expect(result.output.split('\n')[0]).toBe(String(sandbox.uidFor(ws)));
      expect(result.output).not.toContain('direct-secret-value');
      expect(result.output).toContain('ECONNREFUSED');
      expect(result.output).not.toContain('CONNECTED');
      expect(existsSync(join(root, 'outside'))).toBe(false);
      expect(existsSync(join(ws, 'inside'))).toBe(true);
      expect(result.output).toMatch(/CapEff:\s+0000000000000000/);
      expect(result.output).toMatch(/NoNewPrivs:\s+1/);
      expect(result.output).not.toContain('USERNS-OK');
      expect(result.output).toContain('end');
    } finally {
      delete process.env.GOAL_LOOP_DIRECT_SECRET;
      await new Promise((r) => server.close(r));
    }
  });

  it('says which path the jail uid cannot reach, and how to fix it', async () => {
    const { ws } = await jailRoot(); // 0700, as mkdtemp makes it
    const attempt = runIn(jail({ jailMode: 'direct' }), ws, 'true');
    await expect(attempt).rejects.toThrow(/cannot reach .*workspace .*Fix: keep the workspaces \(GOAL_LOOP_WORKSPACES\)/s);
  });

  it('holds a fork flood at the process limit and leaves nothing behind', async () => {
    const { ws } = await reachableRoot();
    // Every process of the jail uid counts once run() returned: no jail started ahead for a next command.
    const sandbox = jail({ jailMode: 'direct', warm: false, limits: { maxProcesses: 64 } });
    const uid = sandbox.uidFor(ws);
    const sampler = sampleProcessCount(uid);
    const result = await runIn(sandbox, ws, ':(){ :|:& };: ; sleep 600', { timeoutMs: 2500 });
    const max = sampler.stop();
    expect(result.output).toContain('Resource temporarily unavailable');
    expect(max).toBeLessThanOrEqual(64);
    expect(processesOfUid(uid)).toEqual([]);
  });
});
