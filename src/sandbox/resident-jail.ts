import type { ChildProcess } from 'node:child_process';
import { chownSync, closeSync, constants, openSync, rmSync, write, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import type { CommandRequest, CommandResult } from '../ports/sandbox.js';
import type { CommandCgroup } from './cgroup.js';
import { CommandLimits, commandResult } from './command-limits.js';
import { type Capture, makeFifos } from './run-captured.js';
import type { TreeIdentity } from './tree-identity.js';

/** What the bot holds of one resident jail (see SERVER in bwrap-args.ts). */
export interface ResidentParts {
  /** What a request must match to use it: workspace, uid, passed variables. */
  key: string;
  /** Real path of the workspace, and the directory (and `.git`) the jail bound. */
  workspace: string;
  tree: TreeIdentity;
  uid: number;
  gid: number;
  /** Owner of the output FIFOs (the jail uid when the bot is root, else undefined: the bot's own). */
  fifoOwner: { uid: number; gid: number } | undefined;
  /** The launcher: stdin the request pipe's read end, stdout (and stderr) the server's statuses. */
  launcher: ChildProcess;
  /** Write end of the server's request pipe. */
  input: number;
  /** Host folder bound at RESIDENT_CHANNEL: the cells' mount table and the output FIFOs. */
  channel: string;
  cgroup: CommandCgroup | undefined;
  /** After the jail ended: waits for every jailed process to be gone, removes the cgroup and the channel. */
  close(): Promise<void>;
}

/** One command: its output FIFO's name, CPU limit, command line and environment, already encoded. */
export interface ResidentCommand {
  request: (out: string) => Buffer;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the server's status line is framed with RS bytes, as the start marker is.
const STATUS = /\x1egoal-loop-exit (\d+)\x1e\n/;
const READ_BUFFER_BYTES = 64 * 1024;
/** After the status, how long the output may take to reach its end (every writer is gone by then). */
const DRAIN_GRACE_MS = 2000;
/** Output FIFOs made per `mkfifo` run. */
const FIFO_BATCH = 8;

/**
 * A jail that runs a workspace's commands one after another, each in a cell of its own (fresh
 * pid, mount and IPC namespaces, /tmp, home and /dev/shm; no capabilities), made by the jail's server
 * ahead of its command. One command at a time: `run` sends the request only once the previous
 * status came. A command that times out, is aborted or stalls ends the whole jail.
 */
export class ResidentJail {
  readonly parts: ResidentParts;
  private statusText = '';
  private onStatus: ((code: number) => void) | undefined;
  private onExit: (() => void) | undefined;
  private exited = false;
  private busy = false;
  private seq = 0;
  private readonly fifos: string[] = [];
  /** The last request's write, maybe still in the thread pool: the input closes only once it is done. */
  private sending: Promise<void> = Promise.resolve();

  constructor(parts: ResidentParts) {
    this.parts = parts;
    parts.launcher.stdout?.setEncoding('latin1');
    parts.launcher.stdout?.on('data', (text: string) => this.status(text));
    parts.launcher.stderr?.resume();
    // 'close', not 'exit': a status the server printed just before it died is read first.
    parts.launcher.once('close', () => {
      this.exited = true;
      this.onExit?.();
    });
    parts.launcher.once('error', () => {
      this.exited = true;
      this.onExit?.();
    });
  }

  /** The launcher (and so the server) is still there. */
  get alive(): boolean {
    return !this.exited && this.parts.launcher.exitCode === null && this.parts.launcher.signalCode === null;
  }

  get pid(): number | undefined {
    return this.parts.launcher.pid;
  }

  /** While it waits in the pool, the jail does not keep the bot alive. */
  unref(): void {
    this.parts.launcher.unref();
    (this.parts.launcher.stdout as Socket | null)?.unref?.();
  }

  ref(): void {
    this.parts.launcher.ref();
    (this.parts.launcher.stdout as Socket | null)?.ref?.();
  }

  /** What the jail printed besides statuses (bwrap's own errors), for a log line. */
  diagnostics(): string {
    return this.statusText.replace(STATUS, '').trim();
  }

  private status(text: string): void {
    this.statusText += text;
    const m = STATUS.exec(this.statusText);
    if (!m) {
      // Anything else is the jail's own diagnostics: keep the tail only.
      if (this.statusText.length > 8192) this.statusText = this.statusText.slice(-4096);
      return;
    }
    this.statusText = this.statusText.slice(m.index + m[0].length);
    const done = this.onStatus;
    this.onStatus = undefined;
    done?.(Number(m[1]));
  }

  /** A fresh FIFO in the channel folder, owned by the jail uid; FIFOs are made a batch at a time. */
  private takeFifo(): string {
    if (this.fifos.length === 0) {
      const names = Array.from({ length: FIFO_BATCH }, () => `out-${++this.seq}`);
      makeFifos(names.map((n) => join(this.parts.channel, n)));
      const owner = this.parts.fifoOwner;
      if (owner) for (const n of names) chownSync(join(this.parts.channel, n), owner.uid, owner.gid);
      this.fifos.push(...names.reverse());
    }
    return this.fifos.pop()!;
  }

  /**
   * Runs one command; its output goes to `capture` (the start marker included: the caller's
   * StartFilter tells whether the command started). The limits count from now.
   */
  run(command: ResidentCommand, capture: Capture, req: Pick<CommandRequest, 'timeoutMs' | 'signal' | 'stallMs' | 'cwd'>): Promise<CommandResult> {
    if (this.busy) {
      capture.close();
      return Promise.reject(new Error('a resident jail runs one command at a time'));
    }
    let name: string;
    let path: string | undefined;
    let read: number | undefined;
    let hostWrite: number | undefined;
    try {
      name = this.takeFifo();
      path = join(this.parts.channel, name);
      read = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
      // Our own write end: the reader sees no end before the gate opens its own, only after the status.
      hostWrite = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if (read !== undefined) closeSync(read);
      if (path) rmSync(path, { force: true });
      capture.close();
      return Promise.reject(err);
    }
    this.busy = true;
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    let limits: CommandLimits | undefined;
    const reader = new Socket({
      fd: read,
      readable: true,
      writable: false,
      onread: {
        buffer,
        callback: (n: number, buf: Uint8Array) => {
          limits?.output();
          capture.write(Buffer.from(buf.buffer, buf.byteOffset, n));
        },
      },
    } as ConstructorParameters<typeof Socket>[0]);
    const started = Date.now();
    // A limit that ends the command ends the jail: its cell is no process group of ours.
    limits = new CommandLimits(req, this.parts.launcher.pid, () => this.kill());
    const ending = limits;
    return new Promise((resolve) => {
      let settled = false;
      let drained = false;
      let code: number | undefined;
      let ended = false;
      let grace: NodeJS.Timeout | undefined;
      // Our own write end goes once the command ended: then the reader sees the end when its last writer is gone.
      const closeHostWrite = () => {
        if (hostWrite === undefined) return;
        closeSync(hostWrite);
        hostWrite = undefined;
        grace = setTimeout(() => {
          drained = true;
          finish();
        }, DRAIN_GRACE_MS);
      };
      const finish = () => {
        if (settled || !drained || (code === undefined && !ended)) return;
        settled = true;
        ending.stop();
        clearTimeout(grace);
        this.onStatus = undefined;
        this.onExit = undefined;
        reader.destroy();
        rmSync(path, { force: true });
        capture.close();
        this.busy = false;
        const exit = code === undefined ? { code: null, signal: this.parts.launcher.signalCode ?? null } : { code, signal: null };
        resolve(commandResult(ending, capture, exit, started));
      };
      const drain = () => {
        drained = true;
        finish();
      };
      reader.on('end', drain);
      reader.on('error', drain);
      this.onStatus = (status) => {
        code = status;
        // The command ended: a limit that fires while its output drains must not end it (nor the jail), as in runCaptured.
        ending.stop();
        closeHostWrite();
        finish();
      };
      this.onExit = () => {
        ended = true;
        ending.stop();
        closeHostWrite();
        finish();
      };
      reader.resume();
      if (this.exited) this.onExit();
      else this.sending = sendBytes(this.parts.input, command.request(name));
    });
  }

  /** Kills every process of the jail (the launcher's group; bwrap's --die-with-parent does the rest). */
  kill(): void {
    const pid = this.parts.launcher.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }

  /** Ends the jail: every process killed, then what it left removed. */
  async end(): Promise<void> {
    // Held until it is gone, so a caller awaiting this keeps the bot alive meanwhile.
    this.ref();
    this.kill();
    // A launcher that was never spawned (no pid) reports an 'error', never an 'exit'.
    if (!this.exited && this.parts.launcher.pid !== undefined) await new Promise<void>((r) => this.parts.launcher.once('close', () => r()));
    // With the server gone the write fails (EPIPE); closed before, its descriptor could be another file's by then.
    await this.sending;
    try {
      closeSync(this.parts.input);
    } catch {
      /* closed already */
    }
    this.parts.launcher.stdout?.destroy();
    await this.parts.close();
  }
}

/**
 * Writes a request to the server; a server gone meanwhile (EPIPE) shows as a jail that ended.
 * Settles once every byte is written or the write failed.
 */
function sendBytes(fd: number, request: Buffer): Promise<void> {
  // An empty pipe takes PIPE_BUF bytes without blocking; more goes through the thread pool.
  if (request.length <= 4096) {
    try {
      writeSync(fd, request);
    } catch {
      /* the server is gone: its exit is reported */
    }
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    // One write(2) may take less than all of it (a signal): the rest follows.
    const from = (at: number) =>
      write(fd, request, at, request.length - at, null, (err, n) => {
        if (err || at + n >= request.length) resolve();
        else from(at + n);
      });
    from(0);
  });
}
