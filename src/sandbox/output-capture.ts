import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export interface CaptureLimits {
  headBytes: number;
  tailBytes: number;
  /** Bound on the full log written to disk. */
  maxLogBytes: number;
}

export const DEFAULT_CAPTURE: CaptureLimits = { headBytes: 16 * 1024, tailBytes: 16 * 1024, maxLogBytes: 20 * 1024 * 1024 };

/**
 * Keeps the head and the tail of a command's output in memory (bounded whatever it prints)
 * and the full output, up to a bound, in a log file.
 */
export class OutputCapture {
  private readonly head: Buffer[] = [];
  private headLen = 0;
  /** The last `tailBytes` bytes after the head, in a ring: no allocation per chunk. */
  private readonly ring: Buffer;
  private ringEnd = 0;
  private tailLen = 0;
  private total = 0;
  private logged = 0;
  private fd: number | undefined;
  private logCut = false;

  constructor(
    private readonly limits: CaptureLimits = DEFAULT_CAPTURE,
    readonly logPath?: string,
  ) {
    this.ring = Buffer.alloc(limits.tailBytes);
    if (logPath) {
      mkdirSync(dirname(logPath), { recursive: true });
      this.fd = openSync(logPath, 'w', 0o600);
    }
  }

  write(chunk: Buffer): void {
    this.total += chunk.length;
    this.writeLog(chunk);
    let rest = chunk;
    if (this.headLen < this.limits.headBytes) {
      const take = Math.min(rest.length, this.limits.headBytes - this.headLen);
      // Copies: the caller may reuse the chunk's memory.
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headLen += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.ring.length === 0) return;
    if (rest.length > this.ring.length) rest = rest.subarray(rest.length - this.ring.length);
    const first = Math.min(rest.length, this.ring.length - this.ringEnd);
    rest.copy(this.ring, this.ringEnd, 0, first);
    rest.copy(this.ring, 0, first);
    this.ringEnd = (this.ringEnd + rest.length) % this.ring.length;
    this.tailLen = Math.min(this.ring.length, this.tailLen + rest.length);
  }

  get bytes(): number {
    return this.total;
  }

  get truncated(): boolean {
    return this.total > this.limits.headBytes + this.limits.tailBytes;
  }

  /** Head and tail as text, with a marker where bytes were cut. */
  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const start = (this.ringEnd - this.tailLen + this.ring.length) % Math.max(1, this.ring.length);
    const tail = start + this.tailLen <= this.ring.length ? this.ring.subarray(start, start + this.tailLen) : Buffer.concat([this.ring.subarray(start), this.ring.subarray(0, this.ringEnd)]);
    const cut = this.total - this.headLen - tail.length;
    if (cut <= 0) return head + tail.toString('utf8');
    const where = this.logPath ? `; full log: ${this.logPath}${this.logCut ? ' (itself cut)' : ''}` : '';
    return `${head}\n[… ${cut} bytes cut${where} …]\n${tail.toString('utf8')}`;
  }

  close(): void {
    if (this.fd !== undefined) {
      closeSync(this.fd);
      this.fd = undefined;
    }
  }

  private writeLog(chunk: Buffer): void {
    if (this.fd === undefined) return;
    const room = this.limits.maxLogBytes - this.logged;
    if (room <= 0) {
      if (!this.logCut) {
        writeSync(this.fd, `\n[goal-loop: log cut at ${this.limits.maxLogBytes} bytes]\n`);
        this.logCut = true;
      }
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    writeSync(this.fd, part);
    this.logged += part.length;
  }
}
