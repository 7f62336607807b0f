import { spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { CommandRequest, CommandResult, SandboxProcess, SpawningSandbox, SpawnRequest } from '../ports/sandbox.js';
import { DEFAULT_SANDBOX_PATH, sandboxEnvironment } from './environment.js';
import { type CaptureLimits, DEFAULT_CAPTURE, OutputCapture } from './output-capture.js';
import { runCaptured } from './run-captured.js';
import { scratchPath } from './scratch.js';
import { wrapSpawned } from './spawned-process.js';

/**
 * A plain process runner: cleared environment, own process group killed on timeout, capped
 * output. It isolates nothing else; the bwrap sandbox is the real jail.
 */
export class ProcessSandbox implements SpawningSandbox {
  readonly kind = 'process';

  constructor(private readonly capture: CaptureLimits = DEFAULT_CAPTURE) {}

  // Spawned by hand, not with execa, for the same reasons as the bwrap jail: a FIFO as the
  // output fd, a process group killed as a whole (see run-captured.ts).
  async run(req: CommandRequest): Promise<CommandResult> {
    const home = scratchPath('home');
    await mkdir(home, { mode: 0o700 });
    try {
      const env = { ...req.passEnv, ...req.packageStore?.env, ...sandboxEnvironment({ path: `${dirname(process.execPath)}:${DEFAULT_SANDBOX_PATH}`, home, extra: req.env }) };
      return await runCaptured(
        (output) => spawn('bash', ['-c', req.command], { cwd: req.cwd, env, detached: true, stdio: ['ignore', output, output] }),
        new OutputCapture(this.capture, req.logPath),
        req,
      );
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  async spawn(req: SpawnRequest): Promise<SandboxProcess> {
    const home = scratchPath('home');
    await mkdir(home, { mode: 0o700 });
    const base = sandboxEnvironment({ path: `${dirname(process.execPath)}:${DEFAULT_SANDBOX_PATH}`, home, extra: req.env });
    const child = spawn(req.program, req.args, { cwd: req.cwd, env: { ...req.passEnv, ...base }, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    return wrapSpawned(child, {
      stripStartMarker: false,
      lifetimeMs: req.lifetimeMs,
      ...(req.logPath ? { logPath: req.logPath } : {}),
      cleanup: () => rm(home, { recursive: true, force: true }),
    });
  }
}
