import type { ChildProcess } from 'node:child_process';
import type { CommandRequest, CommandResult } from '../ports/sandbox.js';
import type { OutputCapture } from './output-capture.js';

/**
 * Runs a child started in its own process group, captures its output, enforces the timeout
 * and the abort signal, and kills the whole group when the command ends so no background
 * process outlives it.
 */
export function runCaptured(
  start: () => ChildProcess,
  capture: OutputCapture,
  req: Pick<CommandRequest, 'timeoutMs' | 'signal'>,
): Promise<CommandResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = start();
    } catch (err) {
      capture.close();
      reject(err);
      return;
    }
    let timedOut = false;
    let aborted = false;
    let exit: { code: number | null; signal: string | null } | undefined;
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* group already gone */
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, req.timeoutMs);
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    if (req.signal?.aborted) onAbort();
    req.signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout?.on('data', (c: Buffer) => capture.write(c));
    child.stderr?.on('data', (c: Buffer) => capture.write(c));
    child.on('error', (err) => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      capture.close();
      reject(err);
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Background children may still hold the pipes open: end them with the group.
      killGroup();
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      capture.close();
      const final = exit ?? { code, signal };
      resolve({
        exitCode: timedOut || aborted ? null : final.code,
        signal: final.signal,
        timedOut,
        aborted,
        output: capture.text(),
        outputBytes: capture.bytes,
        truncated: capture.truncated,
        durationMs: Date.now() - started,
        ...(capture.logPath ? { logPath: capture.logPath } : {}),
      });
    });
  });
}
