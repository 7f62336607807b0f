import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'goal-loop-run-';
let dir: string | undefined;
let seq = 0;

/**
 * This process's scratch directory for the sandbox's short-lived files (generated /etc files,
 * output FIFOs, throwaway homes). Removed when the process exits; a process that was killed
 * leaves it behind, and the next bot process removes it (its name carries the dead pid).
 * World-readable (not writable) so a jail started as another uid can bind files from it.
 */
export function processScratch(): string {
  if (dir && existsSync(dir)) return dir;
  removeStale();
  const created = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
  chmodSync(created, 0o755);
  if (!dir) process.once('exit', () => rmSync(dir!, { recursive: true, force: true }));
  dir = created;
  return dir;
}

/** A fresh, unused path inside the scratch directory. */
export function scratchPath(label: string): string {
  return join(processScratch(), `${label}-${++seq}`);
}

function removeStale(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^goal-loop-run-(\d+)-/.exec(name);
    if (!m || Number(m[1]) === process.pid || existsSync(`/proc/${m[1]}`)) continue;
    rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}
