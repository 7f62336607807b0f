import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SandboxUnavailableError } from '../../src/ports/sandbox.js';
import { PROCESS_SANDBOX_WARNING, selectSandbox } from '../../src/sandbox/select-sandbox.js';
import { findProgram } from '../../src/sandbox/toolchain.js';
import { directToolchain } from '../helpers/sandbox-jail.js';
import { tempDir } from '../helpers/temp.js';

/** A pino logger whose records land in an array. */
function recordingLogger(): { logger: pino.Logger; records: Array<{ level: number; msg: string }> } {
  const records: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void records.push(JSON.parse(line) as { level: number; msg: string }) });
  return { logger, records };
}

describe('selectSandbox', () => {
  it('returns the bwrap jail after proving it starts on this host', async () => {
    const { logger, records } = recordingLogger();
    const sandbox = await selectSandbox({ mode: 'bwrap', logger });
    expect(sandbox.kind).toBe('bwrap');
    expect(records.some((r) => r.msg.startsWith('bwrap nested jail'))).toBe(true);
  });

  it('refuses when bubblewrap is missing, saying how to install it and what the fallback is', async () => {
    const { logger } = recordingLogger();
    const attempt = selectSandbox({ mode: 'bwrap', logger, bwrapPath: '/nonexistent/bin/bwrap' });
    await expect(attempt).rejects.toBeInstanceOf(SandboxUnavailableError);
    await expect(attempt).rejects.toThrow(/bubblewrap \(bwrap\) is not installed \(no executable at \/nonexistent\/bin\/bwrap\)/);
    await expect(attempt).rejects.toThrow(/apt-get install bubblewrap/);
    await expect(attempt).rejects.toThrow(/sandbox: process/);
  });

  it("refuses when bwrap cannot create namespaces here, with bwrap's own message and a fix", async () => {
    const dir = await tempDir();
    const fake = join(dir, 'bwrap');
    // Answers --help like the real one, then fails the way bwrap does without user namespaces.
    await writeFile(
      fake,
      `#!/bin/sh\nif [ "$1" = --help ]; then exec ${findProgram('bwrap')} --help; fi\n` +
        `echo "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n`,
    );
    await chmod(fake, 0o755);
    const { logger } = recordingLogger();
    const attempt = selectSandbox({ mode: 'bwrap', logger, bwrapPath: fake });
    await expect(attempt).rejects.toBeInstanceOf(SandboxUnavailableError);
    await expect(attempt).rejects.toThrow(/the bwrap jail did not start .*No permissions to creating new namespace/s);
    await expect(attempt).rejects.toThrow(/Fix: /);
  });

  it('refuses a bwrap too old for the jail', async () => {
    const dir = await tempDir();
    const fake = join(dir, 'bwrap');
    await writeFile(fake, '#!/bin/sh\necho "usage: bwrap [OPTIONS...] COMMAND"\n');
    await chmod(fake, 0o755);
    const { logger } = recordingLogger();
    await expect(selectSandbox({ mode: 'bwrap', logger, bwrapPath: fake })).rejects.toThrow(/too old .*--unshare-all/s);
  });

  describe('a bwrap that cannot size its tmpfs (before 0.8: Ubuntu 22.04 ships 0.6)', () => {
    /** A bwrap 0.6 on PATH: reports 0.6.1, has no `--size` in its help, and runs the real one otherwise. */
    async function bwrap06OnPath(): Promise<() => void> {
      const dir = await tempDir();
      await chmod(dir, 0o755); // the direct jail's uid runs it
      const real = findProgram('bwrap')!;
      const fake = join(dir, 'bwrap');
      await writeFile(fake, `#!/bin/sh\ncase "$1" in\n  --version) echo "bubblewrap 0.6.1"; exit 0 ;;\n  --help) ${real} --help | grep -v -e --size; exit 0 ;;\nesac\nexec ${real} "$@"\n`);
      await chmod(fake, 0o755);
      const path = process.env.PATH;
      process.env.PATH = `${dir}:${path ?? ''}`;
      return () => {
        process.env.PATH = path;
      };
    }

    it('is refused by default, naming its version and the fix', async () => {
      const restore = await bwrap06OnPath();
      try {
        const { logger } = recordingLogger();
        const attempt = selectSandbox({ mode: 'bwrap', logger, jailMode: 'direct', env: {} });
        await expect(attempt).rejects.toBeInstanceOf(SandboxUnavailableError);
        await expect(attempt).rejects.toThrow(/bubblewrap 0\.6\.1\) cannot size a tmpfs.*install bubblewrap 0\.8\.0 or newer.*GOAL_LOOP_ALLOW_UNSIZED_TMPFS=1/s);
      } finally {
        restore();
      }
    });

    it('runs with GOAL_LOOP_ALLOW_UNSIZED_TMPFS=1, with a loud warning', async () => {
      const restore = await bwrap06OnPath();
      try {
        const { logger, records } = recordingLogger();
        const sandbox = await selectSandbox({ mode: 'bwrap', logger, jailMode: 'direct', toolchain: directToolchain(), env: { GOAL_LOOP_ALLOW_UNSIZED_TMPFS: '1' } });
        expect(sandbox.kind).toBe('bwrap');
        expect(records).toContainEqual(expect.objectContaining({ level: 40, msg: expect.stringMatching(/^TMPFS NOT SIZED .*bubblewrap 0\.6\.1/) }));
      } finally {
        restore();
      }
    });
  });

  it('gives the unisolated process sandbox only when asked, with a loud warning', async () => {
    const { logger, records } = recordingLogger();
    const sandbox = await selectSandbox({ mode: 'process', logger });
    expect(sandbox.kind).toBe('process');
    expect(records).toEqual([expect.objectContaining({ level: 40, msg: PROCESS_SANDBOX_WARNING })]);
    expect(PROCESS_SANDBOX_WARNING).toMatch(/SANDBOX DISABLED/);
  });
});
