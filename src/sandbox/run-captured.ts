import { type ChildProcess, spawnSync } from 'node:child_process';
import { closeSync, constants, fchmodSync, openSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import type { CommandRequest, CommandResult } from '../ports/sandbox.js';
import { scratchPath } from './scratch.js';
import { StallWatch } from './stall-watch.js';

/** Where a command's output goes: an OutputCapture, or a filter in front of one. */
export interface Capture {
  /** The chunk is only valid during the call: keep a copy of what is kept. */
  write(chunk: Buffer): void;
  close(): void;
  text(): string;
  readonly bytes: number;
  readonly truncated: boolean;
  readonly logPath?: string | undefined;
}

/** Starts the child with `output` (a file descriptor) as its stdout and stderr, in its own process group. */
export type StartChild = (output: number) => ChildProcess;

/** After the command exits, how long processes that escaped its group may keep the output open. */
const DRAIN_GRACE_MS = 2000;
const READ_BUFFER_BYTES = 64 * 1024;

// Not execa: the child's stdout and stderr are one file descriptor (the write end of a FIFO)
// handed to it at spawn and read here into one reused buffer, and the child leads its own
// process group, killed as a group (its background processes included) with a drain grace for
// escapees. execa could pass the fd, but then its buffering, maxBuffer and output handling have
// nothing to read, and its timeout and cancelSignal kill the one pid, not the group: what would
// remain of it is spawn.
/**
 * Runs a child started in its own process group, captures its output, enforces the timeout
 * and the abort signal, and kills the whole group when the command ends so no background
 * process outlives it.
 *
 * Output travels through a FIFO read into one reused buffer: however much a command prints,
 * the bot allocates nothing per chunk, so a flood does not raise its memory.
 */
export function runCaptured(start: StartChild, capture: Capture, req: Pick<CommandRequest, 'timeoutMs' | 'signal' | 'stallMs' | 'cwd'>): Promise<CommandResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let channel: { read: number; write: number };
    try {
      channel = openOutputChannel();
    } catch (err) {
      capture.close();
      reject(err);
      return;
    }
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    let watch: StallWatch | undefined;
    const reader = new Socket({
      fd: channel.read,
      readable: true,
      writable: false,
      onread: {
        buffer,
        callback: (n: number, buf: Uint8Array) => {
          watch?.output();
          capture.write(Buffer.from(buf.buffer, buf.byteOffset, n));
        },
      },
    } as ConstructorParameters<typeof Socket>[0]);
    let child: ChildProcess;
    try {
      child = start(channel.write);
    } catch (err) {
      closeSync(channel.write);
      reader.destroy();
      capture.close();
      reject(err);
      return;
    }
    // Only the child holds the write end now: the reader sees EOF when the child's tree is gone.
    closeSync(channel.write);

    let timedOut = false;
    let stalled = false;
    let aborted = false;
    let exit: { code: number | null; signal: string | null } | undefined;
    let drained = false;
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
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
    if (req.stallMs !== undefined && child.pid !== undefined) {
      watch = new StallWatch({
        pid: child.pid,
        workspace: req.cwd,
        stallMs: req.stallMs,
        onStall: () => {
          stalled = true;
          killGroup();
        },
      });
    }
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    if (req.signal?.aborted) onAbort();
    req.signal?.addEventListener('abort', onAbort, { once: true });

    const cleanup = () => {
      clearTimeout(timer);
      watch?.stop();
      if (grace) clearTimeout(grace);
      req.signal?.removeEventListener('abort', onAbort);
      reader.destroy();
      capture.close();
    };
    const finish = () => {
      if (settled || !exit || !drained) return;
      settled = true;
      cleanup();
      resolve({
        exitCode: timedOut || stalled || aborted ? null : exit.code,
        signal: exit.signal,
        timedOut,
        ...(stalled ? { stalled } : {}),
        aborted,
        output: capture.text(),
        outputBytes: capture.bytes,
        truncated: capture.truncated,
        durationMs: Date.now() - started,
        ...(capture.logPath ? { logPath: capture.logPath } : {}),
      });
    };
    reader.on('end', () => {
      drained = true;
      finish();
    });
    reader.on('error', () => {
      drained = true;
      finish();
    });
    reader.resume();
    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      killGroup();
      cleanup();
      reject(err);
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      watch?.stop();
      // Background children may still hold the output open: end them with the group.
      killGroup();
      grace = setTimeout(() => {
        drained = true;
        finish();
      }, DRAIN_GRACE_MS);
      finish();
    });
  });
}

/** FIFOs made ahead, several per `mkfifo` run: a process start costs more than the rest of the channel. */
const FIFO_BATCH = 8;
const fifos: string[] = [];

/** A fresh FIFO (mode 0600) in this process's scratch directory, used once. */
function takeFifo(): string {
  if (fifos.length === 0) {
    const batch = Array.from({ length: FIFO_BATCH }, () => scratchPath('output'));
    const made = spawnSync('mkfifo', ['-m', '600', '--', ...batch], { env: { PATH: '/usr/bin:/bin' } });
    if (made.status !== 0) {
      for (const path of batch) rmSync(path, { force: true });
      throw new Error(`cannot create the output FIFO: ${made.error?.message ?? String(made.stderr).trim()}`);
    }
    fifos.push(...batch);
  }
  return fifos.pop()!;
}

/** A FIFO, already unlinked: a non-blocking read end for us, a blocking write end for the child. */
function openOutputChannel(): { read: number; write: number } {
  let fifo = takeFifo();
  try {
    let read: number;
    try {
      read = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // The scratch directory was swept (and made anew): the FIFOs made ahead went with it.
      fifos.length = 0;
      fifo = takeFifo();
      read = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    }
    let write: number;
    try {
      write = openSync(fifo, constants.O_WRONLY);
    } catch (err) {
      closeSync(read);
      throw err;
    }
    // Once unlinked, only holders of the FIFO can reach it (through /proc/<pid>/fd): let the
    // jail's own uid reopen it there, as `/dev/stdout` and `/dev/stderr` do.
    rmSync(fifo, { force: true });
    fchmodSync(write, 0o602);
    return { read, write };
  } finally {
    rmSync(fifo, { force: true });
  }
}
