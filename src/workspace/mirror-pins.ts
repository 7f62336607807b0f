import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { isAlive } from './file-lock.js';

/**
 * Pins mark a mirror as in use by a goal workspace, so eviction leaves it alone while goals on
 * that repository are live. One file per workspace in `<mirror>.pins/`; a pin whose process
 * died or whose workspace is gone no longer counts (a crashed worker cannot pin forever).
 */
export class MirrorPins {
  constructor(private readonly dir: string) {}

  async add(holder: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    // Written aside and renamed: a reader never sees (and deletes) a half-written pin.
    const name = pinName(holder);
    const tmp = join(this.dir, `.${name}.${process.pid}`);
    await writeFile(tmp, JSON.stringify({ pid: process.pid, host: hostname(), holder }), { mode: 0o600 });
    await rename(tmp, join(this.dir, name));
  }

  async remove(holder: string): Promise<void> {
    await rm(join(this.dir, pinName(holder)), { force: true });
  }

  /** True while at least one pin is live; dead pins are deleted on the way. */
  async inUse(): Promise<boolean> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    let live = false;
    for (const name of names) {
      if (name.startsWith('.')) continue;
      const path = join(this.dir, name);
      const pin = parsePin(await readFile(path, 'utf8').catch(() => ''));
      if (pin && isLive(pin)) live = true;
      else await rm(path, { force: true });
    }
    return live;
  }

  async clear(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

interface Pin {
  pid: number;
  host: string;
  holder: string;
}

function pinName(holder: string): string {
  return createHash('sha256').update(holder).digest('hex').slice(0, 16);
}

function parsePin(text: string): Pin | undefined {
  try {
    const p = JSON.parse(text) as Partial<Pin>;
    return typeof p.pid === 'number' && typeof p.host === 'string' && typeof p.holder === 'string' ? (p as Pin) : undefined;
  } catch {
    return undefined;
  }
}

/** Pins from another host cannot be checked: kept, to be safe. */
function isLive(pin: Pin): boolean {
  if (pin.host !== hostname()) return true;
  return isAlive(pin.pid) && existsSync(pin.holder);
}
