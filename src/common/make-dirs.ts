import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * `mkdir -p`. Node's own `{ recursive: true }` loops forever when mkdir keeps answering ENOENT
 * under an existing parent (e.g. `/proc/nope`); this tries each level once and throws.
 */
export function makeDirs(dir: string): void {
  if (tryMkdir(dir)) return;
  const parent = dirname(dir);
  if (parent === dir) throw Object.assign(new Error(`cannot create ${dir}: no such file or directory`), { code: 'ENOENT' });
  makeDirs(parent);
  if (!tryMkdir(dir)) mkdirSync(dir); // the parent exists now: a second ENOENT is thrown as is
}

/** true: `dir` is a directory now; false: its parent is missing. */
function tryMkdir(dir: string): boolean {
  try {
    mkdirSync(dir);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' && statSync(dir).isDirectory()) return true;
    if (code === 'ENOENT') return false;
    throw err;
  }
}
