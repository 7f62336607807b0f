import { chmodSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_JAIL_LIMITS } from '../../src/sandbox/bwrap-sandbox.js';
import { explainJailFailure } from '../../src/sandbox/jail-start.js';
import { jail, jailRoot, runIn } from '../helpers/sandbox-jail.js';

// Every devpts instance draws on the host's one kernel.pty.max pool (all but the reserve of the
// host's own instance): a jail that opens ptys without a cap starves every other jail and container.
const PTY_FLOOD = `python3 - <<'EOF'
import os
fds = []
try:
    while len(fds) < 500:
        fds.append(os.openpty())
except OSError as e:
    print("refused:", e.strerror)
print("opened", len(fds))
EOF
grep -E '^Cap(Eff|Prm|Bnd|Amb):' /proc/self/status`;

function opened(output: string): number {
  const m = /^opened (\d+)$/m.exec(output);
  if (!m) throw new Error(`no count in: ${output}`);
  return Number(m[1]);
}

describe('the jail caps its ptys', () => {
  for (const jailMode of ['nested', 'direct'] as const) {
    it(`${jailMode}: a pty flood stops at the jail's own cap, and the command holds no capability`, async () => {
      const { root, ws } = await jailRoot();
      chmodSync(root, 0o755); // direct: the jail uid must reach the workspace
      const sandbox = jail({ jailMode, limits: { maxPtys: 8 } });
      const result = await runIn(sandbox, ws, PTY_FLOOD);
      expect(result.output).toContain('refused: No space left on device');
      expect(opened(result.output)).toBe(8);
      for (const cap of ['CapEff', 'CapPrm', 'CapBnd', 'CapAmb']) expect(result.output).toMatch(new RegExp(`${cap}:\\s+0{16}`));
    });
  }

  it('the default cap is small, and a task can still use a pty (script, expect, pty tests)', async () => {
    expect(DEFAULT_JAIL_LIMITS.maxPtys).toBeLessThanOrEqual(64);
    const { ws } = await jailRoot();
    const result = await runIn(jail(), ws, `${PTY_FLOOD}\npython3 -c 'import pty, os; pid, fd = pty.fork()\nif pid == 0: os.execvp("tty", ["tty"])\nprint(os.read(fd, 100).decode().strip())'`);
    expect(opened(result.output)).toBe(DEFAULT_JAIL_LIMITS.maxPtys);
    expect(result.output).toMatch(/^\/dev\/pts\/\d+$/m);
  });
});

describe('the step that mounts the capped devpts holds capabilities: nothing the repository chose reaches it', () => {
  it('a variable the repo config passes (LD_DEBUG, LD_PRELOAD…) reaches the command, never the privileged step', async () => {
    const { ws } = await jailRoot();
    // LD_DEBUG makes the dynamic loader of every program that sees it report the libraries it
    // loads: mount loads libmount, setpriv libcap-ng; the command here loads neither.
    const result = await runIn(jail(), ws, 'echo "seen: $LD_DEBUG $REPO_VALUE"', { passEnv: { LD_DEBUG: 'libs', REPO_VALUE: 'kept' } });
    expect(result.exitCode).toBe(0);
    expect(result.output).toContain('seen: libs kept');
    expect(result.output).not.toMatch(/libmount|libcap-ng/);
  });
});

describe('a host that refuses the jail its own devpts', () => {
  it('the refusal says what failed and how to fix it', () => {
    const why = explainJailFailure('mount: /dev/pts: must be superuser to use mount.\n       dmesg(1) may have more information after failed mount system call.');
    expect(why?.reason).toMatch(/capped \/dev\/pts/);
    expect(why?.fix).toMatch(/systempaths=unconfined/);
  });
});
