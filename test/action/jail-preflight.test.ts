import { readFileSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { APPARMOR_STEP, jailPreflight } from '../../src/action/jail-preflight.js';
import { SandboxUnavailableError } from '../../src/ports/sandbox.js';
import { selectSandbox } from '../../src/sandbox/select-sandbox.js';
import { findProgram } from '../../src/sandbox/toolchain.js';
import { tempDir } from '../helpers/temp.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * What explainJailFailure (src/sandbox/jail-start.ts) says when AppArmor refuses bwrap's
 * namespaces. It reads the host's sysctl, which this machine does not have, so the text is
 * written here; the first test keeps it what jail-start.ts says.
 */
const APPARMOR_REASON = 'AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)';
const APPARMOR_FIX = 'install an AppArmor profile that allows userns for /usr/bin/bwrap, or `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`';

/** selectSandbox's refusal on a GitHub-hosted Ubuntu 24.04 runner: bwrap's own words, then the reason and fix, then the fallback hint. */
const APPARMOR_REFUSAL =
  'cannot run untrusted commands: the bwrap jail did not start (exit 1): bwrap: setting up uid map: Permission denied\n' +
  `${APPARMOR_REASON}. Fix: ${APPARMOR_FIX}\n` +
  'To run repository commands WITHOUT isolation instead (not recommended), set `sandbox: process` in .github/goal-loop.yml.';

const silent = pino({ level: 'silent' });

/** A bwrap that answers --help like the real one, then fails with `message` as bwrap does. */
async function failingBwrap(message: string): Promise<string> {
  const fake = join(await tempDir(), 'bwrap');
  await writeFile(fake, `#!/bin/sh\nif [ "$1" = --help ]; then exec ${findProgram('bwrap')} --help; fi\necho "${message}" >&2\nexit 1\n`);
  await chmod(fake, 0o755);
  return fake;
}

describe('jailPreflight', () => {
  it("the AppArmor text it is tested with is jail-start's own", () => {
    const source = readFileSync(join(ROOT, 'src/sandbox/jail-start.ts'), 'utf8');
    expect(source).toContain(APPARMOR_REASON.replace(/ \(kernel.*\)$/, ''));
    expect(source).toContain('(kernel.apparmor_restrict_unprivileged_userns = 1)');
    expect(source).toContain(APPARMOR_FIX);
  });

  it('names the workflow step to add, in one line, when AppArmor keeps the jail from starting', async () => {
    const result = await jailPreflight({
      sandbox: 'bwrap',
      probe: async () => {
        throw new SandboxUnavailableError(APPARMOR_REFUSAL);
      },
    });
    expect(result.ok).toBe(false);
    const line = (result as { line: string }).line;
    expect(line).toContain('sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0');
    expect(line).toContain(APPARMOR_STEP);
    expect(line).toMatch(/AppArmor/);
    expect(line).not.toContain('\n');
    // Never suggests running unjailed.
    expect(line).not.toMatch(/sandbox: process|WITHOUT isolation/);
  });

  it('gives any other reason, and its fix, in one line (bwrap not installed)', async () => {
    const result = await jailPreflight({
      sandbox: 'bwrap',
      probe: async () => {
        await selectSandbox({ mode: 'bwrap', logger: silent, bwrapPath: '/nonexistent/bin/bwrap' });
      },
    });
    expect(result).toEqual({ ok: false, line: expect.stringContaining('bubblewrap (bwrap) is not installed') });
    const line = (result as { line: string }).line;
    expect(line).toContain('apt-get install bubblewrap');
    expect(line).not.toContain('\n');
    expect(line).not.toContain('apparmor_restrict_unprivileged_userns');
    expect(line).not.toMatch(/sandbox: process|WITHOUT isolation/);
  });

  it("gives bwrap's own words when a jail fails to start for another reason", async () => {
    const bwrapPath = await failingBwrap('bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.');
    const result = await jailPreflight({
      sandbox: 'bwrap',
      probe: async () => {
        await selectSandbox({ mode: 'bwrap', logger: silent, bwrapPath });
      },
    });
    expect(result.ok).toBe(false);
    const line = (result as { line: string }).line;
    expect(line).toMatch(/^the bwrap jail cannot start: the bwrap jail did not start \(exit 1\): bwrap: No permissions to creating new namespace.* Fix: /);
    expect(line).not.toContain('\n');
  });

  it('passes where the jail starts (bwrap works on this machine), with the real test jail', async () => {
    expect(await jailPreflight({ sandbox: 'bwrap' })).toEqual({ ok: true });
  });

  it('passes `sandbox: process`, chosen explicitly, without starting a jail, saying commands run unjailed', async () => {
    let probed = false;
    const result = await jailPreflight({
      sandbox: 'process',
      probe: async () => {
        probed = true;
        throw new Error('no jail here');
      },
    });
    expect(probed).toBe(false);
    expect(result.ok).toBe(true);
    expect((result as { note?: string }).note).toMatch(/unjailed on the runner/);
    expect((result as { note?: string }).note).toMatch(/chosen/);
  });
});
