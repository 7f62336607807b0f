import { type ChildProcess, spawnSync } from 'node:child_process';
import { closeSync, constants, fchmodSync, openSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import type { CommandRequest, CommandResult } from '../ports/sandbox.js';
import { CommandLimits, commandResult } from './command-limits.js';
import { scratchPath } from './scratch.js';

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

/** A child and its output channel; `go` attaches the capture and starts the timeout, the abort and the stall watch. */
class CapturedChild {
  readonly child: ChildProcess;
  private readonly reader: Socket;
  private capture: Capture | undefined;
  private exit: { code: number | null; signal: string | null } | undefined;
  private error: Error | undefined;
  private drained = false;
  private grace: NodeJS.Timeout | undefined;
  private limits: CommandLimits | undefined;
  /** Called on every exit, error and end of output; `go` sets it. */
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
      this.limits?.stop();
      // Background children may still hold the output open: end them with the group.
      this.killGroup();
      this.grace = setTimeout(drained, DRAIN_GRACE_MS);
      this.wake();
    });
  }

  /** Captures the output and enforces the limits, from now. Once. */
  go(capture: Capture, req: Pick<CommandRequest, 'timeoutMs' | 'signal' | 'stallMs' | 'cwd'>): Promise<CommandResult> {
    const started = Date.now();
    this.capture = capture;
    const running = this.exit === undefined && this.error === undefined;
    const limits = new CommandLimits(req, running ? this.child.pid : undefined, () => this.killGroup());
    this.limits = limits;
    return new Promise((resolve, reject) => {
      let settled = false;
      const cleanup = () => {
        limits.stop();
        if (this.grace) clearTimeout(this.grace);
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
        resolve(commandResult(limits, capture, this.exit, started));
      };
      this.wake();
    });
  }

  private output(chunk: Buffer): void {
    this.limits?.output();
    this.capture?.write(chunk);
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
 * A pipe for a child's stdin (a resident jail's server): a FIFO, already unlinked, a blocking read end
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
    makeFifos(batch);
    fifos.push(...batch);
  }
  return fifos.pop()!;
}

/** Makes FIFOs (mode 0600) at `paths` with one `mkfifo` run; none is left when it fails. */
export function makeFifos(paths: readonly string[]): void {
  const made = spawnSync('mkfifo', ['-m', '600', '--', ...paths], { env: { PATH: '/usr/bin:/bin' } });
  if (made.status !== 0) {
    for (const path of paths) rmSync(path, { force: true });
    throw new Error(`cannot create the output FIFO: ${made.error?.message ?? String(made.stderr).trim()}`);
  }
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
