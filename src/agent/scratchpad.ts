import { mkdir, open, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Bytes one `read_log` page returns. */
export const LOG_PAGE_BYTES = 6000;

/**
 * Tier 3 of the agent's context: full command output and long tool results stay on disk, one
 * file per log, outside the workspace. The prompt carries an excerpt and the log's id; the model
 * pages through the rest with `read_log`.
 */
export class Scratchpad {
  private readonly logs = new Map<string, { path: string; label: string }>();
  private seq = 0;

  constructor(readonly dir: string) {}

  /** Starts empty (a repeated attempt number replaces the old attempt's logs). */
  async init(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  /** Reserves a log for a writer that fills the file itself (the sandbox's full output). */
  reserve(label: string): { id: string; path: string } {
    const id = `L${++this.seq}`;
    const path = join(this.dir, `${id}-${label.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40)}.log`);
    this.logs.set(id, { path, label });
    return { id, path };
  }

  async save(label: string, text: string): Promise<string> {
    const { id, path } = this.reserve(label);
    await writeFile(path, text, { mode: 0o600 });
    return id;
  }

  has(id: string): boolean {
    return this.logs.has(id);
  }

  /** A page of a log, with where it sits in the whole and how to get the next one. */
  async page(id: string, offset = 0, limit = LOG_PAGE_BYTES): Promise<string> {
    const log = this.logs.get(id);
    if (!log) {
      const known = [...this.logs.keys()];
      throw new Error(`no log "${id}"${known.length > 0 ? `; logs of this attempt: ${known.join(', ')}` : '; this attempt has no logs yet'}`);
    }
    const size = (await stat(log.path).catch(() => undefined))?.size ?? 0;
    const start = Math.max(0, Math.min(Math.floor(offset), size));
    const length = Math.max(0, Math.min(limit, size - start));
    const buf = Buffer.alloc(length);
    if (length > 0) {
      const handle = await open(log.path, 'r');
      try {
        await handle.read(buf, 0, length, start);
      } finally {
        await handle.close();
      }
    }
    const end = start + length;
    const next = end < size ? `; next page: read_log {"id": "${id}", "offset": ${end}}` : '; end of log';
    return `[log ${id} (${log.label}), bytes ${start}-${end} of ${size}${next}]\n${buf.toString('utf8')}`;
  }
}

/** The head and the tail of a text, with a marker saying how much was cut in between. */
export function excerpt(text: string, headChars: number, tailChars: number, note = ''): string {
  if (text.length <= headChars + tailChars) return text;
  const cut = text.length - headChars - tailChars;
  return `${text.slice(0, headChars)}\n[… ${cut} characters cut${note ? `; ${note}` : ''} …]\n${text.slice(text.length - tailChars)}`;
}
