import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CELL_BIND_FD, cellMountTable, DEV_SHM_BYTES, fstabField, type JailSpec, jailArgv, residentRequest, START_MARKER } from '../../src/sandbox/bwrap-args.js';
import { OutputCapture } from '../../src/sandbox/output-capture.js';
import { installPrefix } from '../../src/sandbox/toolchain.js';

const spec = (extra: Partial<JailSpec> = {}): JailSpec => ({
  mode: 'nested',
  dropToUid: true,
  bwrap: '/usr/bin/bwrap',
  setpriv: '/usr/bin/setpriv',
  mount: '/usr/bin/mount',
  envProgram: '/usr/bin/env',
  maxPtys: 16,
  bash: '/usr/bin/bash',
  uid: 1_000_123,
  gid: 1_000_123,
  toolchain: { topLevel: [{ kind: 'symlink', path: '/bin', target: 'usr/bin' }], roBinds: ['/opt/node-20'], masks: ['/opt/node-20/etc/npmrc'] },
  files: [{ src: '/tmp/scratch/passwd', dest: '/etc/passwd' }],
  emptyFile: '/tmp/scratch/empty',
  workspace: '/srv/ws/goal',
  hasGitDir: true,
  home: '/home/goal-loop',
  env: { PATH: '/usr/bin', HOME: '/home/goal-loop', CI: '1', GOAL_ID: 'g' },
  network: false,
  features: { tmpfsSize: true },
  tmpBytes: 1024,
  homeBytes: 2048,
  command: 'npm test',
  ...extra,
});

/** The value after each occurrence of a flag (or the pair after a two-argument flag). */
function flagValues(argv: string[], flag: string, n = 1): string[][] {
  const out: string[][] = [];
  argv.forEach((a, i) => {
    if (a === flag) out.push(argv.slice(i + 1, i + 1 + n));
  });
  return out;
}

describe('jailArgv', () => {
  it('nested (bot is root): privileged outer bwrap, setpriv to the jail uid, unprivileged inner bwrap with everything unshared', () => {
    const argv = jailArgv(spec());
    const setpriv = argv.indexOf('/usr/bin/setpriv');
    const innerStart = argv.indexOf('/usr/bin/bwrap', setpriv);
    const outer = argv.slice(0, setpriv);
    const drop = argv.slice(setpriv, innerStart);
    const stepStart = argv.indexOf('-p') - 1;
    const inner = argv.slice(innerStart, stepStart);
    expect(outer.slice(0, 4)).toEqual(['/usr/bin/bwrap', '--unshare-pid', '--die-with-parent', '--cap-drop']);
    expect(flagValues(outer, '--cap-add')).toEqual([['CAP_SETUID'], ['CAP_SETGID']]);
    expect(drop).toEqual(['/usr/bin/setpriv', '--reuid=1000123', '--regid=1000123', '--clear-groups', '--no-new-privs', '--']);
    for (const flag of ['--unshare-all', '--unshare-user', '--die-with-parent', '--new-session', '--clearenv']) expect(inner).toContain(flag);
    // bwrap's --disable-userns would put the command in a nested user namespace, where the capped devpts cannot be mounted.
    expect(inner).not.toContain('--disable-userns');
    expect(flagValues(inner, '--cap-drop')).toEqual([['ALL']]);
    expect(flagValues(inner, '--cap-add')).toEqual([['CAP_SYS_ADMIN'], ['CAP_SYS_RESOURCE'], ['CAP_SETPCAP']]);
    expect(inner).not.toContain('--share-net');
    // The step that holds those capabilities mounts the capped devpts, turns off user namespaces, and drops every capability.
    const step = argv.slice(stepStart);
    expect(step.slice(0, 3)).toEqual(['/usr/bin/bash', '-p', '-c']);
    expect(step[3]).toContain('max=$2');
    expect(step[3]).toContain('echo 0 > /proc/sys/user/max_user_namespaces');
    expect(step[3]).toContain('--inh-caps=-all --ambient-caps=-all --bounding-set=-all');
    expect(step.slice(4, 8)).toEqual(['goal-loop-jail-step', '/usr/bin/mount', '16', '/usr/bin/setpriv']);
    expect(argv.slice(-3)).toEqual(['/usr/bin/bash', '-c', "printf '\\036goal-loop-jail-started\\036' || exit 125\nnpm test"]);
  });

  it('binds the workspace read-write and its .git read-only over it; the toolchain read-only, credential files masked', () => {
    const argv = jailArgv(spec());
    const ws = argv.findIndex((a, i) => a === '--bind' && argv[i + 1] === '/srv/ws/goal');
    const git = argv.findIndex((a, i) => a === '--ro-bind' && argv[i + 1] === '/srv/ws/goal/.git');
    expect(ws).toBeGreaterThan(0);
    expect(git).toBeGreaterThan(ws);
    // The outer shows the inner bwrap the host /proc (the inner mounts its own over it), the
    // workspace is the only read-write bind, and the inner re-binds the outer's root.
    expect(flagValues(argv, '--bind', 2)).toEqual([
      ['/proc', '/proc'],
      ['/srv/ws/goal', '/srv/ws/goal'],
      ['/', '/'],
    ]);
    expect(flagValues(argv, '--ro-bind', 2)).toEqual(
      expect.arrayContaining([
        ['/usr', '/usr'],
        ['/opt/node-20', '/opt/node-20'],
        ['/tmp/scratch/empty', '/opt/node-20/etc/npmrc'],
        ['/tmp/scratch/passwd', '/etc/passwd'],
      ]),
    );
    const mask = argv.findIndex((a, i) => a === '--ro-bind' && argv[i + 2] === '/opt/node-20/etc/npmrc');
    const tool = argv.findIndex((a, i) => a === '--ro-bind' && argv[i + 1] === '/opt/node-20');
    expect(mask).toBeGreaterThan(tool);
    // Outer and inner each mount a capped /dev/shm over a /dev made read-only; the inner's /dev
    // is its own small tmpfs with the host's harmless nodes bound in, not bwrap's --dev.
    expect(flagValues(argv, '--tmpfs')).toEqual([['/dev/shm'], ['/tmp'], ['/dev'], ['/dev/shm'], ['/home/goal-loop']]);
    expect(flagValues(argv, '--size')).toEqual([[String(DEV_SHM_BYTES)], ['1024'], ['65536'], [String(DEV_SHM_BYTES)], ['2048']]);
    // The outer's root (which the inner binds as its own) goes read-only after the last mount.
    expect(flagValues(argv, '--remount-ro')).toEqual([['/dev'], ['/'], ['/dev']]);
    expect(flagValues(argv, '--dev')).toEqual([['/dev']]);
    expect(flagValues(argv, '--dev-bind', 2)).toEqual(['null', 'zero', 'full', 'random', 'urandom', 'tty'].map((n) => [`/dev/${n}`, `/dev/${n}`]));
  });

  it('gives the command exactly the given environment, and the privileged step only a fixed PATH', () => {
    const argv = jailArgv(spec({ mode: 'direct', dropToUid: false }));
    const clear = argv.lastIndexOf('--clearenv');
    expect(flagValues(argv.slice(clear), '--setenv', 2)).toEqual([['PATH', '/usr/bin:/bin']]);
    const env = argv.indexOf('/usr/bin/env');
    expect(env).toBeGreaterThan(argv.indexOf('/usr/bin/setpriv'));
    expect(argv.slice(env, env + 7)).toEqual(['/usr/bin/env', '-i', '--', 'PATH=/usr/bin', 'HOME=/home/goal-loop', 'CI=1', 'GOAL_ID=g']);
  });

  it('direct (bot not root): one unprivileged bwrap, its own /proc, the network only when asked', () => {
    const argv = jailArgv(spec({ mode: 'direct', dropToUid: false, network: true, features: { tmpfsSize: false } }));
    expect(argv.filter((a) => a === '/usr/bin/bwrap')).toHaveLength(1);
    expect(argv.indexOf('/usr/bin/setpriv')).toBeGreaterThan(argv.indexOf('-p')); // only to drop the step's capabilities
    expect(argv).toContain('--share-net');
    expect(argv).not.toContain('--dev');
    expect(argv).not.toContain('--size');
    expect(flagValues(argv, '--proc')).toEqual([['/proc']]);
    // The root tmpfs (the jail uid's, unsized) goes read-only after the home, its last mount.
    expect(flagValues(argv, '--remount-ro')).toEqual([['/dev'], ['/']]);
    expect(argv.indexOf('/', argv.lastIndexOf('--remount-ro'))).toBeGreaterThan(argv.indexOf('/home/goal-loop'));
    expect(argv[0]).toBe('/usr/bin/bwrap');
  });

  it('direct as root: setpriv to the jail uid first', () => {
    const argv = jailArgv(spec({ mode: 'direct' }));
    expect(argv.slice(0, 7)).toEqual(['/usr/bin/setpriv', '--reuid=1000123', '--regid=1000123', '--clear-groups', '--no-new-privs', '--', '/usr/bin/bwrap']);
    expect(argv.filter((a) => a === '/usr/bin/bwrap')).toHaveLength(1);
  });
});

describe("a resident jail's cell mount table", () => {
  it('binds each kept folder from its descriptor after the fresh tmpfs, its path escaped as libmount reads it', () => {
    const table = cellMountTable({ home: '/home/goal-loop', tmpBytes: 1, homeBytes: 2, features: { tmpfsSize: false }, binds: ['/tmp/a b', '/tmp/x#\\y\tz\n'] });
    const lines = table.trimEnd().split('\n');
    expect(lines.slice(0, 3).map((l) => l.split(' ')[1])).toEqual(['/tmp', '/home/goal-loop', '/dev/shm']);
    expect(lines.slice(3)).toEqual([
      `/proc/self/fd/${CELL_BIND_FD} /tmp/a\\040b none rbind,X-mount.mkdir 0 0`,
      `/proc/self/fd/${CELL_BIND_FD + 1} /tmp/x\\043\\134y\\011z\\012 none rbind,X-mount.mkdir 0 0`,
    ]);
    expect(fstabField('/tmp/é\u007f')).toBe('/tmp/é\\177');
  });
});

describe('toolchain prefixes', () => {
  it("binds an installation prefix, never the bot's home or an ancestor of it", () => {
    expect(installPrefix('/root/.nvm/versions/node/v20.19.0/bin/node', '/root', true)).toBe('/root/.nvm/versions/node/v20.19.0');
    expect(installPrefix('/opt/node/bin/node', '/root', true)).toBe('/opt/node');
    expect(installPrefix('/root/bin/git', '/root', true)).toBe('/root/bin');
    expect(installPrefix('/home/bot/git', '/home/bot', true)).toBeUndefined();
    expect(installPrefix('/home/bot', '/home/bot', false)).toBeUndefined();
  });
});

describe('OutputCapture', () => {
  it('keeps the head and the tail across reused chunk buffers, and marks the cut', () => {
    const capture = new OutputCapture({ headBytes: 4, tailBytes: 6, maxLogBytes: 0 });
    const chunk = Buffer.alloc(5);
    for (const part of ['abcde', 'fghij', 'klmno', 'pqrst']) {
      chunk.write(part); // the same memory every time, as the FIFO reader does
      capture.write(chunk);
    }
    expect(capture.bytes).toBe(20);
    expect(capture.truncated).toBe(true);
    expect(capture.text()).toBe('abcd\n[… 10 bytes cut …]\nopqrst');
  });

  it('returns short output whole', () => {
    const capture = new OutputCapture({ headBytes: 4, tailBytes: 6, maxLogBytes: 0 });
    capture.write(Buffer.from('abcdefg'));
    expect(capture.text()).toBe('abcdefg');
    expect(capture.truncated).toBe(false);
  });
});

// A resident jail's cell gate, run here with the host's bash: what the server hands each cell.
describe("a resident jail's cell gate", () => {
  const argv = jailArgv(spec({ resident: { channel: '/srv/channel', unshare: '/usr/bin/unshare', keep: { dirs: [], files: [] } } }));
  const at = argv.indexOf('goal-loop-server');
  const [bash, envProgram, gateScript, marker] = [argv[at + 2]!, argv[at + 6]!, argv[at + 9]!, argv[at + 10]!];
  const channel = mkdtempSync(join(tmpdir(), 'cell-gate-'));
  afterAll(() => rmSync(channel, { recursive: true, force: true }));
  const run = (input: Buffer, extraFd = false) =>
    spawnSync(bash, ['--norc', '--noprofile', '-c', gateScript, 'goal-loop-gate', envProgram, bash, marker, channel], {
      input,
      env: { PATH: '/usr/bin:/bin' },
      stdio: extraFd ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    });
  const output = (name: string) => (existsSync(join(channel, name)) ? readFileSync(join(channel, name), 'utf8') : undefined);

  it('runs the command it is handed with exactly its environment and CPU limit, stdin on /dev/null, its output in its FIFO after the start marker', () => {
    expect(argv.slice(at - 5, at - 1)).toEqual([bash, '--norc', '--noprofile', '-c']);
    const out = run(residentRequest('out-1', { soft: '100', hard: '110' }, 'echo "[$GOAL_X]"; env | grep -c . ; cat; ulimit -S -t; ulimit -H -t; exit 3', { GOAL_X: 'a b\nc', HOME: '/h' }));
    // GOAL_X (two lines), HOME, and what bash adds itself (PWD, SHLVL, _).
    expect({ status: out.status, stdout: String(out.stdout) }).toEqual({ status: 3, stdout: '' });
    expect(output('out-1')).toBe(`${START_MARKER}[a b\nc]\n6\n100\n110\n`);
  });

  it('gives the command no descriptor it inherited beyond stdin, stdout and stderr', () => {
    const out = run(residentRequest('out-2', { soft: 'unlimited', hard: 'unlimited' }, 'ls /proc/self/fd | sort -n | tr "\n" " "', {}), true);
    expect(out.status).toBe(0);
    // 0-2, and the one ls opens to read the folder.
    expect(output('out-2')).toBe(`${START_MARKER}0 1 2 3 `);
  });

  it('runs nothing, and prints no marker, when its stdin closes before a whole request or names no FIFO of its channel', () => {
    const whole = residentRequest('out-3', { soft: '1', hard: '1' }, 'echo RAN', { GOAL_X: '1' });
    for (const cut of [Buffer.alloc(0), whole.subarray(0, 4), whole.subarray(0, whole.length - 1)]) {
      const out = run(cut);
      expect({ status: out.status, stdout: String(out.stdout) }).toEqual({ status: 125, stdout: '' });
    }
    expect(output('out-3')).toBeUndefined();
    mkdirSync(join(channel, 'sub'));
    for (const name of ['../escaped', 'sub/out-4', '', 'OUT']) {
      const out = run(residentRequest(name, { soft: '1', hard: '1' }, 'echo RAN', {}));
      expect(out.status).toBe(125);
    }
    expect(existsSync(join(channel, '..', 'escaped'))).toBe(false);
    expect(output('sub/out-4')).toBeUndefined();
  });
});
