import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SandboxUnavailableError } from '../../src/ports/sandbox.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { discoverToolchain } from '../../src/sandbox/toolchain.js';
import { git } from '../helpers/git.js';
import { jail, jailRoot, processesNamed, runIn } from '../helpers/sandbox-jail.js';

describe('the jail filesystem', () => {
  it('writes nowhere outside the workspace: not beside it, not the host /tmp, not /usr, /etc or the home', async () => {
    const { root, ws } = await jailRoot();
    const outside = join(root, 'outside');
    await mkdir(outside);
    chmodSync(outside, 0o777); // writable by any uid, were it visible
    const tag = randomBytes(6).toString('hex');
    const targets = [
      join(outside, 'pwned'),
      join(root, `escape-${tag}`),
      `/tmp/goal-loop-jail-escape-${tag}`,
      `/usr/goal-loop-${tag}`,
      `/etc/goal-loop-${tag}`,
      `/root/goal-loop-${tag}`,
      `/goal-loop-${tag}`,
    ];
    const attack = [
      `echo pwned > ${targets[0]}`,
      `echo pwned > ../escape-${tag}`,
      `echo pwned > ${targets[2]}`,
      `echo pwned > ${targets[3]}`,
      `echo pwned > ${targets[4]}`,
      `echo pwned > ${targets[5]}`,
      `echo pwned > ${targets[6]}`,
      'ln -s / rootlink && echo pwned > rootlink/goal-loop-via-link',
      'echo done',
    ].join('; ');

    const control = await runIn(new ProcessSandbox(), ws, `echo pwned > ${targets[0]}; echo pwned > ../escape-${tag}`);
    expect(control.exitCode).toBe(0);
    expect(existsSync(targets[0]!) && existsSync(targets[1]!)).toBe(true); // unjailed, the writes land
    await Promise.all(targets.slice(0, 2).map((t) => import('node:fs/promises').then((fs) => fs.rm(t))));

    const result = await runIn(jail(), ws, attack);
    expect(result.output).toContain('done');
    for (const t of targets) expect(existsSync(t), t).toBe(false);
    expect(existsSync('/goal-loop-via-link')).toBe(false);
    expect(result.output).toMatch(/Read-only file system|Permission denied/);
  });

  it('writes the workspace (as the jail uid), with a private /tmp and home that do not outlive the command', async () => {
    const { ws } = await jailRoot();
    const sandbox = jail();
    const first = await runIn(sandbox, ws, 'mkdir -p src && echo made > src/file && echo t > /tmp/left && echo h > ~/left && id -u');
    expect(first.exitCode).toBe(0);
    expect(await readFile(join(ws, 'src', 'file'), 'utf8')).toBe('made\n');
    const uid = sandbox.uidFor(ws);
    expect(Number(first.output.trim())).toBe(uid);
    expect(statSync(join(ws, 'src', 'file')).uid).toBe(uid);
    const second = await runIn(sandbox, ws, 'ls /tmp ~; echo listed');
    expect(second.output.trim()).not.toContain('left');
  });

  it('keeps the workspace .git read-only: no hook, no config, no rename', async () => {
    const { root, ws } = await jailRoot();
    git(ws, 'init', '--quiet');
    const configBefore = readFileSync(join(ws, '.git', 'config'), 'utf8');
    const marker = join(root, 'hook-ran');
    const attack = [
      `printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/pre-commit`,
      'chmod +x .git/hooks/pre-commit',
      `git config core.fsmonitor "touch ${marker}"`,
      'git config core.hooksPath /tmp',
      'mv .git .git-moved',
      'rm -rf .git',
      'echo done',
    ].join('; ');
    const result = await runIn(jail(), ws, attack);
    expect(result.output).toContain('done');
    expect(result.output).toMatch(/Read-only file system/);
    expect(existsSync(join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(readFileSync(join(ws, '.git', 'config'), 'utf8')).toBe(configBefore);
    expect(lstatSync(join(ws, '.git')).isDirectory()).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });

  it('runs node, npm and git: `npm test` and git in a clone the bot owns', async () => {
    const { root, ws } = await jailRoot();
    const origin = join(root, 'origin');
    await mkdir(origin);
    git(origin, 'init', '--quiet', '--initial-branch=main');
    await writeFile(join(origin, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0', scripts: { test: 'node --test' } }));
    await writeFile(join(origin, 'a.test.js'), "require('node:test')('adds', () => require('node:assert').equal(1 + 1, 2));\n");
    git(origin, 'add', '.');
    git(origin, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'init');
    await import('node:fs/promises').then((fs) => fs.rm(ws, { recursive: true }));
    git(root, 'clone', '--quiet', origin, ws);
    const result = await runIn(jail(), ws, 'node --version && npm --version && npm test 2>&1 | grep -E "^# (pass|fail)" && git log --format=%s && git status --short && echo ALL-OK');
    expect(result.output).toContain('ALL-OK');
    expect(result.output).toMatch(/# pass 1\n# fail 0/);
    expect(result.output).toContain('init');
    expect(result.exitCode).toBe(0);
  });

  it('runs as a non-root uid with no capabilities, no new privileges and no further user namespaces', async () => {
    const { ws } = await jailRoot();
    const sandbox = jail();
    const result = await runIn(sandbox, ws, 'id -u; grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs):" /proc/self/status; unshare -U true && echo USERNS-OK; unshare -n true && echo NETNS-OK; echo end');
    const uid = sandbox.uidFor(ws);
    expect(uid).not.toBe(0);
    expect(result.output.trim().split('\n')[0]).toBe(String(uid));
    expect(result.output).toMatch(/CapEff:\s+0000000000000000/);
    expect(result.output).toMatch(/CapPrm:\s+0000000000000000/);
    expect(result.output).toMatch(/CapBnd:\s+0000000000000000/);
    expect(result.output).toMatch(/NoNewPrivs:\s+1/);
    expect(result.output).not.toContain('USERNS-OK');
    expect(result.output).not.toContain('NETNS-OK');
  });

  it('is a real non-root uid on the host, not root of a user namespace (so RLIMIT_NPROC binds)', async () => {
    const { ws } = await jailRoot();
    const sandbox = jail();
    const token = `goal-loop-uid-probe-${randomBytes(4).toString('hex')}`;
    const stop = new AbortController();
    const running = runIn(sandbox, ws, `exec -a ${token} sleep 600`, { signal: stop.signal });
    let pids: number[] = [];
    while (pids.length === 0) {
      await new Promise((r) => setTimeout(r, 20));
      pids = processesNamed(token);
    }
    const status = readFileSync(`/proc/${pids[0]}/status`, 'utf8');
    stop.abort();
    expect((await running).aborted).toBe(true);
    const uid = sandbox.uidFor(ws);
    // Real, effective, saved and filesystem uid, as the host kernel sees them.
    expect(/^Uid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/)).toEqual([uid, uid, uid, uid].map(String));
    expect(/^Gid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/)).toEqual([uid, uid, uid, uid].map(String));
    expect(processesNamed(token)).toEqual([]);
  });

  it('finds a toolchain outside /usr, read-only, and hides credential files in it', async () => {
    const { root, ws } = await jailRoot();
    const prefix = join(root, 'opt', 'tool-1.0');
    await mkdir(join(prefix, 'bin'), { recursive: true });
    await mkdir(join(prefix, 'etc'), { recursive: true });
    await writeFile(join(prefix, 'bin', 'yarn'), '#!/bin/sh\necho fake-yarn-from-prefix\n');
    await chmod(join(prefix, 'bin', 'yarn'), 0o755);
    await writeFile(join(prefix, 'etc', 'npmrc'), '//registry.npmjs.org/:_authToken=npm_fakeSecretToken\n', { mode: 0o644 });
    const toolchain = discoverToolchain({ hostPath: `${join(prefix, 'bin')}:${process.env.PATH}` });
    expect(toolchain.roBinds).toContain(prefix);
    const result = await runIn(jail({ toolchain }), ws, `yarn; cat ${join(prefix, 'etc', 'npmrc')}; echo x > ${join(prefix, 'bin', 'pwned')}; echo end`);
    expect(result.output).toContain('fake-yarn-from-prefix');
    expect(result.output).not.toContain('npm_fakeSecretToken');
    expect(result.output).toContain('Read-only file system');
    expect(existsSync(join(prefix, 'bin', 'pwned'))).toBe(false);
  });

  it('refuses a system directory as workspace, and reports a jail that cannot start as unavailable', async () => {
    const { ws } = await jailRoot();
    await expect(runIn(jail(), '/etc', 'true')).rejects.toBeInstanceOf(SandboxUnavailableError);
    const toolchain = { ...discoverToolchain(), roBinds: ['/nonexistent/goal-loop-toolchain'] };
    const broken = runIn(jail({ toolchain }), ws, 'echo never');
    await expect(broken).rejects.toBeInstanceOf(SandboxUnavailableError);
    await expect(broken).rejects.toThrow(/did not start.*nonexistent/s);
    // Printing the start marker itself changes nothing for a command that did start.
    const forged = await runIn(jail(), ws, "printf '\\036goal-loop-jail-started\\036'; echo hi; exit 7");
    expect(forged.exitCode).toBe(7);
    // A command that does not parse did start: its syntax error is its own output, not the jail's.
    const unparsable = await runIn(jail(), ws, 'echo never; if');
    expect(unparsable.exitCode).toBe(2);
    expect(unparsable.output).toContain('syntax error');
    expect(unparsable.output).not.toContain('never');
  });
});
