import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

function newestCtimeMs(dir: string): number {
  let newest = Math.floor(lstatSync(dir).ctimeMs);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) newest = Math.max(newest, newestCtimeMs(join(dir, e.name)));
  }
  return newest;
}

/**
 * Waits until the wall clock's millisecond is past every folder's ctime under `dir`. A folder memo
 * with no racy window still skips a folder whose ctime is in the walk's own millisecond (a change
 * in that millisecond may come after the read), so a test counting reads waits for this first.
 */
export async function clockPastCtimes(dir: string): Promise<void> {
  const newest = newestCtimeMs(dir);
  while (Date.now() <= newest) await new Promise((resolve) => setTimeout(resolve, 1));
}
