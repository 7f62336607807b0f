import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { jail, jailRoot, runIn } from '../helpers/sandbox-jail.js';

// Each adversarial probe is run twice: unjailed (ProcessSandbox), where it must find the secret
// (so the probe really works), and in the jail, where it must not.
const SECRET = `fake-secret-${randomBytes(8).toString('hex')}`;
const homeSecret = join(homedir(), `.goal-loop-jail-test-${process.pid}-${randomBytes(4).toString('hex')}`);
/** A host process started with the secret in its environment, as the bot itself would be. */
let botLike: ChildProcess;

beforeAll(() => {
  process.env.GITHUB_TOKEN = SECRET;
  process.env.ANTHROPIC_API_KEY = SECRET;
  process.env.GOAL_LOOP_FAKE_SECRET = SECRET;
  // World-readable on purpose: only its absence from the jail can protect it.
  writeFileSync(homeSecret, `token=${SECRET}\n`, { mode: 0o644 });
  // process.env changes do not show in /proc/<pid>/environ: start a process that has them.
  botLike = spawn('sleep', ['600'], { env: { ...process.env }, stdio: 'ignore' });
});

afterAll(() => {
  rmSync(homeSecret, { force: true });
  botLike.kill('SIGKILL');
  delete process.env.GITHUB_TOKEN;
  delete process.env.ANTHROPIC_API_KEY;
  delete process.env.GOAL_LOOP_FAKE_SECRET;
});

describe('the jail shows no secret of the bot', () => {
  it('has only the fixed environment: nothing from the bot, and only GOAL_* from the caller', async () => {
    const { ws } = await jailRoot();
    const request = { env: { GOAL_TASK_ID: 't1', GITHUB_TOKEN: SECRET, NODE_OPTIONS: '--require /tmp/evil.js' } };
    const result = await runIn(jail(), ws, 'env', request);
    expect(result.exitCode).toBe(0);
    expect(result.output).not.toContain(SECRET);
    const names = result.output
      .trim()
      .split('\n')
      .map((l) => l.split('=')[0]);
    expect(new Set(names)).toEqual(new Set(['PATH', 'HOME', 'CI', 'LANG', 'TMPDIR', 'npm_config_manage_package_manager_versions', 'GOAL_TASK_ID', 'PWD', 'SHLVL', '_']));
  });

  it('shows no secret through /proc/*/environ or any process command line', async () => {
    const { ws } = await jailRoot();
    // The pattern cannot match its own command line (`[` is not a hex digit).
    const probe = 'cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" "\\n" | grep -o "fake-secret-[0-9a-f]*" | sort -u; echo probed';
    const unjailed = await runIn(new ProcessSandbox(), ws, probe);
    expect(unjailed.output).toContain(SECRET); // the probe finds the bot's environment when not jailed
    const jailed = await runIn(jail(), ws, probe);
    expect(jailed.output).toContain('probed');
    expect(jailed.output).not.toContain(SECRET);
  });

  it('sees only its own processes', async () => {
    const { ws } = await jailRoot();
    const result = await runIn(jail(), ws, 'ls /proc | grep -E "^[0-9]+$" | wc -l; cat /proc/[0-9]*/comm | sort | tr "\\n" " "');
    const [count, comms] = result.output.trim().split('\n');
    expect(Number(count)).toBeLessThanOrEqual(5);
    expect(comms).not.toMatch(/node|vitest/);
  });

  it("cannot read a secret file in the bot user's home, nor find it anywhere", async () => {
    const { ws } = await jailRoot();
    const read = `cat ${homeSecret}; ls -A ${homedir()}; echo probed`;
    const unjailed = await runIn(new ProcessSandbox(), ws, read);
    expect(unjailed.output).toContain(`token=${SECRET}`);
    const search = `${read}; grep -rsl --exclude-dir=proc --exclude-dir=usr "token=fake-secret" /`;
    const jailed = await runIn(jail(), ws, search);
    expect(jailed.output).toContain('probed');
    expect(jailed.output).not.toContain(SECRET);
    expect(jailed.output).toContain(`cat: ${homeSecret}: No such file or directory`);
  });

  it('inherits no file descriptor from the bot beyond stdin, stdout and stderr', async () => {
    const { ws } = await jailRoot();
    const result = await runIn(jail(), ws, 'ls /proc/self/fd');
    // 3 is the directory ls itself opened.
    expect(result.output.trim().split('\n').sort()).toEqual(['0', '1', '2', '3']);
  });
});
