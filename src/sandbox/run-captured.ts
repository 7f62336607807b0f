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
  let child: CapturedChild;
  try {
    child = new CapturedChild(start);
  } catch (err) {
    capture.close();
    return Promise.reject(err);
  }
  return child.go(capture, req);
}

/** Output a child printed before `go` that is kept for the capture (a warm jail's bwrap diagnostics). */
const EARLY_BYTES = 64 * 1024;

/**
 * A child started now and run later (a warm jail, waiting on its stdin for the command): its
 * output channel is open and read from the start, and `go` attaches the capture and starts the
 * timeout, the abort and the stall watch from that moment. `runCaptured` is start and go at once.
 */
export class CapturedChild {
  readonly child: ChildProcess;
  private readonly reader: Socket;
  private capture: Capture | undefined;
  private early: Buffer[] = [];
  private earlyBytes = 0;
  private exit: { code: number | null; signal: string | null } | undefined;
  private error: Error | undefined;
  private drained = false;
  private grace: NodeJS.Timeout | undefined;
  private watch: StallWatch | undefined;
  private going = false;
  /** Called on every exit, error and end of output; `go` and `discard` set it. */
  private wake: () => void = () => undefined;

  /** Throws when the channel cannot be made or the child cannot be spawned. */
  constructor(start: StartChild) {
    const channel = openOutputChannel();
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    this.reader = new Socket({
      fd: channel.read,
      readable: true,
      writable: false,
      onread: { buffer, callback: (n: number, buf: Uint8Array) => this.output(Buffer.from(buf.buffer, buf.byteOffset, n)) },
    } as ConstructorParameters<typeof Socket>[0]);
    try {
      this.child = start(channel.write);
    } catch (err) {
      closeSync(channel.write);
      this.reader.destroy();
      throw err;
    }
    // Only the child holds the write end now: the reader sees EOF when the child's tree is gone.
    closeSync(channel.write);
    const drained = () => {
      this.drained = true;
      this.wake();
    };
    this.reader.on('end', drained);
    this.reader.on('error', drained);
    this.reader.resume();
    this.child.on('error', (err) => {
      this.error ??= err;
      this.killGroup();
      this.wake();
    });
    this.child.on('exit', (code, signal) => {
      this.exit = { code, signal };
      this.watch?.stop();
      // Background children may still hold the output open: end them with the group.
      this.killGroup();
      this.grace = setTimeout(drained, DRAIN_GRACE_MS);
      if (!this.going) this.grace.unref();
      this.wake();
    });
  }

  /** The child exited or could not start: `go` would only report that. */
  get ended(): boolean {
    return this.exit !== undefined || this.error !== undefined;
  }

  /** While it waits, the child (and its output channel) does not keep the bot alive. */
  unref(): void {
    this.child.unref();
    this.reader.unref();
  }

  /** Captures from now (output printed before is passed on first) and enforces the limits from now. Once. */
  go(capture: Capture, req: Pick<CommandRequest, 'timeoutMs' | 'signal' | 'stallMs' | 'cwd'>): Promise<CommandResult> {
    const started = Date.now();
    this.going = true;
    this.child.ref();
    this.reader.ref();
    this.grace?.ref();
    this.capture = capture;
    for (const chunk of this.early) capture.write(chunk);
    this.early = [];
    return new Promise((resolve, reject) => {
      let timedOut = false;
      let stalled = false;
      let aborted = false;
      let settled = false;
      const timer = setTimeout(() => {
        timedOut = true;
        this.killGroup();
      }, req.timeoutMs);
      if (req.stallMs !== undefined && this.child.pid !== undefined && !this.ended) {
        this.watch = new StallWatch({
          pid: this.child.pid,
          workspace: req.cwd,
          stallMs: req.stallMs,
          onStall: () => {
            stalled = true;
            this.killGroup();
          },
        });
      }
      const onAbort = () => {
        aborted = true;
        this.killGroup();
      };
      if (req.signal?.aborted) onAbort();
      req.signal?.addEventListener('abort', onAbort, { once: true });
      const cleanup = () => {
        clearTimeout(timer);
        this.watch?.stop();
        if (this.grace) clearTimeout(this.grace);
        req.signal?.removeEventListener('abort', onAbort);
        this.reader.destroy();
        capture.close();
      };
      this.wake = () => {
        if (settled) return;
        if (this.error) {
          settled = true;
          this.killGroup();
          cleanup();
          reject(this.error);
          return;
        }
        if (!this.exit || !this.drained) return;
        settled = true;
        cleanup();
        resolve({
          exitCode: timedOut || stalled || aborted ? null : this.exit.code,
          signal: this.exit.signal,
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
      this.wake();
    });
  }

  /** Kills the group of a child that never went; settles once the child has exited. */
  discard(): Promise<void> {
    // Held until it is gone, so a caller awaiting this keeps the bot alive meanwhile.
    this.child.ref();
    this.killGroup();
    return new Promise((resolve) => {
      this.wake = () => {
        if (!this.ended) return;
        if (this.grace) clearTimeout(this.grace);
        this.reader.destroy();
        resolve();
      };
      this.wake();
    });
  }

  private output(chunk: Buffer): void {
    this.watch?.output();
    if (this.capture) this.capture.write(chunk);
    else if (this.earlyBytes < EARLY_BYTES) {
      const kept = Buffer.from(chunk.subarray(0, EARLY_BYTES - this.earlyBytes)); // the chunk's memory is reused
      this.early.push(kept);
      this.earlyBytes += kept.length;
    }
  }

  private killGroup(): void {
    if (this.child?.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      /* group already gone */
    }
  }
}

/**
 * A pipe for a child's stdin (a warm jail's gate): a FIFO, already unlinked, a blocking read end
 * for the child and a write end for us. A pipe, not a socket: bash on a socket stdin reads ~/.bashrc.
 */
export function openInputChannel(): { read: number; write: number } {
  // Opening the read end without O_NONBLOCK would wait for a writer: open it once non-blocking
  // to let the write end open, then again blocking (the child's), and drop the first.
  const { fifo, fd: probe } = openFifoNonBlocking();
  try {
    let write: number;
    let read: number;
    try {
      write = openSync(fifo, constants.O_WRONLY | constants.O_NOFOLLOW);
      try {
        read = openSync(fifo, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (err) {
        closeSync(write);
        throw err;
      }
    } finally {
      closeSync(probe);
    }
    return { read, write };
  } finally {
    rmSync(fifo, { force: true });
  }
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

/** A fresh FIFO and its read end opened non-blocking; the caller unlinks the FIFO. */
function openFifoNonBlocking(): { fifo: string; fd: number } {
  const fifo = takeFifo();
  try {
    return { fifo, fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // The scratch directory was swept (and made anew): the FIFOs made ahead went with it.
    fifos.length = 0;
    const again = takeFifo();
    return { fifo: again, fd: openSync(again, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW) };
  }
}

/** A FIFO, already unlinked: a non-blocking read end for us, a blocking write end for the child. */
function openOutputChannel(): { read: number; write: number } {
  const { fifo, fd: read } = openFifoNonBlocking();
  try {
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
