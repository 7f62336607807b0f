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
  private head: Buffer[] = [];
  private headLen = 0;
  private tail: Buffer[] = [];
  private tailLen = 0;
  private total = 0;
  private logged = 0;
  private fd: number | undefined;
  private logCut = false;

  constructor(
    private readonly limits: CaptureLimits = DEFAULT_CAPTURE,
    readonly logPath?: string,
  ) {
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
      this.head.push(rest.subarray(0, take));
      this.headLen += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(Buffer.from(rest));
    this.tailLen += rest.length;
    while (this.tailLen - (this.tail[0]?.length ?? 0) >= this.limits.tailBytes) {
      this.tailLen -= this.tail.shift()!.length;
    }
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
    let tail = Buffer.concat(this.tail);
    if (tail.length > this.limits.tailBytes) tail = tail.subarray(tail.length - this.limits.tailBytes);
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
