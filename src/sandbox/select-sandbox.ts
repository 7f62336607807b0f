import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { type CommandResult, type Sandbox, SandboxUnavailableError } from '../ports/sandbox.js';
import { BwrapSandbox, type BwrapSandboxOptions } from './bwrap-sandbox.js';
import { ProcessSandbox } from './process-sandbox.js';
import { scratchPath } from './scratch.js';
import { findProgram } from './toolchain.js';

export interface SelectSandboxOptions extends BwrapSandboxOptions {
  /** The repo config's `sandbox`: `bwrap` (required by default) or `process` (no isolation). */
  mode: 'bwrap' | 'process';
  logger: Logger;
  /** Run a trivial command in the jail before accepting it (default true). */
  probe?: boolean;
}

const INSTALL_FIX = 'install bubblewrap: `apt-get install bubblewrap` (Debian/Ubuntu), `dnf install bubblewrap` (Fedora/RHEL), `apk add bubblewrap` (Alpine)';
const FALLBACK_HINT = 'To run repository commands WITHOUT isolation instead (not recommended), set `sandbox: process` in .github/goal-loop.yml.';

export const PROCESS_SANDBOX_WARNING =
  "SANDBOX DISABLED (`sandbox: process`): repository and goal commands run as plain processes with the bot's own user and " +
  'filesystem and the network. Only a cleared environment, a timeout and an output cap protect the host. ' +
  'Use `sandbox: bwrap` for anything you do not fully trust.';

/**
 * The sandbox a run uses. `bwrap` is refused, with the exact reason and fix, where bubblewrap is
 * missing or cannot start a jail on this host: untrusted commands never fall back silently.
 * `process` is the explicit, loudly warned fallback.
 */
export async function selectSandbox(opts: SelectSandboxOptions): Promise<Sandbox> {
  if (opts.mode === 'process') {
    opts.logger.warn({ sandbox: 'process' }, PROCESS_SANDBOX_WARNING);
    return new ProcessSandbox(opts.capture);
  }
  if (!findProgram(opts.bwrapPath ?? 'bwrap')) {
    throw new SandboxUnavailableError(
      `cannot run untrusted commands: bubblewrap (bwrap) is not installed (${opts.bwrapPath ? `no executable at ${opts.bwrapPath}` : 'not found on PATH'}).\nFix: ${INSTALL_FIX}.\n${FALLBACK_HINT}`,
    );
  }
  if (!findProgram(opts.setprivPath ?? 'setpriv')) {
    throw new SandboxUnavailableError(
      'cannot run untrusted commands: setpriv is missing (the jail drops its capabilities with it, and a root bot starts the jail as a non-root uid with it).\n' +
        `Fix: \`apt-get install util-linux\` (it ships setpriv).\n${FALLBACK_HINT}`,
    );
  }
  let sandbox: BwrapSandbox;
  try {
    const { mode: _mode, ...bwrapOptions } = opts;
    sandbox = new BwrapSandbox(bwrapOptions);
  } catch (err) {
    throw new SandboxUnavailableError(`cannot run untrusted commands: ${(err as Error).message}\n${FALLBACK_HINT}`);
  }
  if (opts.probe !== false) await probe(sandbox);
  if (!sandbox.cgroups.available) {
    opts.logger.warn({ sandbox: 'bwrap' }, `sandbox memory limit not enforced: ${sandbox.cgroups.reason} (see README, "Sandbox and threat model")`);
  }
  opts.logger.info({ sandbox: 'bwrap' }, sandbox.describe());
  return sandbox;
}

/** Starts one jail with `true` in a throwaway workspace: proves namespaces, mounts and limits work here. */
async function probe(sandbox: BwrapSandbox): Promise<void> {
  const root = scratchPath('probe');
  await mkdir(root, { mode: 0o755 });
  try {
    const ws = join(root, 'workspace');
    await mkdir(ws);
    let result: CommandResult;
    try {
      result = await sandbox.run({ command: 'true', cwd: ws, timeoutMs: 30_000 });
    } catch (err) {
      throw new SandboxUnavailableError(`cannot run untrusted commands: ${(err as Error).message}\n${FALLBACK_HINT}`);
    }
    if (result.exitCode !== 0) {
      throw new SandboxUnavailableError(
        `cannot run untrusted commands: a test command in the bwrap jail failed (${result.timedOut ? 'timed out' : `exit ${result.exitCode ?? result.signal}`}): ${result.output.trim() || '(no output)'}\n${FALLBACK_HINT}`,
      );
    }
  } finally {
    // The probe's workspace goes now: no jail may wait for a next command there.
    await sandbox.discardWarm();
    await rm(root, { recursive: true, force: true });
  }
}
