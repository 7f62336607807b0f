import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { PassThrough } from 'node:stream';
import type { SandboxProcess } from '../ports/sandbox.js';
import { START_MARKER } from './bwrap-args.js';

const STDERR_TAIL_BYTES = 8 * 1024;
const STDERR_LOG_BYTES = 5 * 1024 * 1024;

export interface WrapOptions {
  /** The jail prints its start marker on stdout before the program runs: drop it. */
  stripStartMarker: boolean;
  lifetimeMs: number;
  logPath?: string;
  /** Runs once the process is gone (the jail's cleanup). */
  cleanup?: () => Promise<void>;
}

// Not execa: the process is long-lived (an MCP server speaking on stdin/stdout), started
// detached in its own process group that is killed as a whole, with stderr kept as a bounded
// tail; execa's promise-per-run model, buffering and single-pid kill fit none of that.
/**
 * A child started in its own process group with piped stdio, as a SandboxProcess: stderr kept
 * as a bounded tail (and a bounded log), the whole group killed on `kill`, at the end of its
 * lifetime, or when it exits (so nothing it started outlives it).
 */
export function wrapSpawned(child: ChildProcess, opts: WrapOptions): SandboxProcess {
  const stdout = new PassThrough();
  let pending: Buffer | undefined = opts.stripStartMarker ? Buffer.alloc(0) : undefined;
  const marker = Buffer.from(START_MARKER);
  child.stdout!.on('data', (chunk: Buffer) => {
    if (pending === undefined) return void stdout.write(chunk);
    pending = Buffer.concat([pending, chunk]);
    const at = pending.indexOf(marker);
    if (at >= 0) {
      const rest = pending.subarray(at + marker.length);
      pending = undefined;
      if (rest.length > 0) stdout.write(rest);
    } else if (pending.length > 64 * 1024) {
      pending = undefined; // no marker: not the jail's output; pass it on
    }
  });
  child.stdout!.on('end', () => stdout.end());

  let tail = Buffer.alloc(0);
  let logged = 0;
  let fd: number | undefined;
  if (opts.logPath) {
    mkdirSync(dirname(opts.logPath), { recursive: true });
    fd = openSync(opts.logPath, 'a', 0o600);
  }
  child.stderr!.on('data', (chunk: Buffer) => {
    tail = Buffer.concat([tail, chunk]);
    if (tail.length > STDERR_TAIL_BYTES) tail = tail.subarray(tail.length - STDERR_TAIL_BYTES);
    if (fd !== undefined && logged < STDERR_LOG_BYTES) {
      const part = chunk.subarray(0, STDERR_LOG_BYTES - logged);
      writeSync(fd, part);
      logged += part.length;
    }
  });

  const killGroup = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  const lifetime = setTimeout(killGroup, opts.lifetimeMs);
  lifetime.unref();
  // Stdin errors (EPIPE after a crash) surface through `exited`; they must not crash the bot.
  child.stdin!.on('error', () => undefined);

  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    let done = false;
    const finish = async (code: number | null, signal: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(lifetime);
      killGroup();
      if (fd !== undefined) closeSync(fd);
      await opts.cleanup?.().catch(() => undefined);
      resolve({ code, signal });
    };
    child.on('exit', (code, signal) => void finish(code, signal));
    child.on('error', (err) => {
      tail = Buffer.from(`cannot start: ${err.message}`);
      void finish(null, null);
    });
  });

  return {
    stdin: child.stdin!,
    stdout,
    exited,
    stderrTail: () => tail.toString('utf8'),
    kill: killGroup,
  };
}

/** A program and its arguments as one bash command line (for the jail, which takes a command). */
export function shellLine(program: string, args: readonly string[]): string {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return `exec ${[program, ...args].map(quote).join(' ')}`;
}
