import { readFile } from 'node:fs/promises';

/**
 * What the nested-repository search needs to know of a tree it did not walk itself: every
 * folder's inode and ctime, and the entries that make a folder a repository (`.git`, or HEAD,
 * refs and objects/commondir). Written by `find` beside a ready copy of setup's output while no
 * command can touch it, so the first checkpoint after a restore stats those folders instead of
 * reading them all (see NestedScanMemo.adopt).
 *
 * The file: the walk's start (ns since the epoch), then one record per entry, each ending in NUL:
 * `<type> <inode> <ctime as seconds.fraction> <path below the walked folder>`.
 */
export const FOLDER_LISTING_FIND = [
  '-mindepth',
  '1',
  '(',
  '-type',
  'd',
  '-o',
  '-name',
  '.git',
  '-o',
  '-name',
  'HEAD',
  '-o',
  '-name',
  'refs',
  '-o',
  '-name',
  'objects',
  '-o',
  '-name',
  'commondir',
  ')',
  '-printf',
  '%y %i %C@ %P\\0',
];

export interface ListedFolder {
  ino: bigint;
  ctimeNs: bigint;
  /** Names of the entries below it that the search looks for (and its subfolders'). */
  names: Buffer[];
  subdirs: Buffer[];
}

export interface FolderListing {
  walkStartedMs: number;
  /** By path below the walked folder (bytes as latin1). */
  folders: Map<string, ListedFolder>;
}

const RECORD = /^([a-zA-Z]) (\d+) (\d+)(?:\.(\d+))? /;

/** The listing at `file`, or undefined when there is none or it does not parse whole. */
export async function readFolderListing(file: string): Promise<FolderListing | undefined> {
  const raw = await readFile(file).catch(() => undefined);
  if (!raw) return undefined;
  const records: Buffer[] = [];
  for (let start = 0; start < raw.length; ) {
    const end = raw.indexOf(0, start);
    if (end < 0) return undefined; // cut short: a walk that did not finish
    records.push(raw.subarray(start, end));
    start = end + 1;
  }
  const started = /^(\d+)$/.exec(records.shift()?.toString('latin1') ?? '');
  if (!started) return undefined;
  const folders = new Map<string, ListedFolder>();
  const entries: Array<{ type: string; path: Buffer }> = [];
  for (const record of records) {
    const m = RECORD.exec(record.subarray(0, 64).toString('latin1'));
    if (!m) return undefined;
    const path = record.subarray(m[0].length);
    if (path.length === 0) return undefined;
    entries.push({ type: m[1]!, path });
    if (m[1] === 'd') folders.set(path.toString('latin1'), { ino: BigInt(m[2]!), ctimeNs: BigInt(m[3]!) * 1_000_000_000n + BigInt((m[4] ?? '').padEnd(9, '0').slice(0, 9)), names: [], subdirs: [] });
  }
  for (const { type, path } of entries) {
    const slash = path.lastIndexOf(0x2f);
    const parent = folders.get(slash < 0 ? '' : path.subarray(0, slash).toString('latin1'));
    if (!parent) continue; // a top-level entry: its parent is the workspace, never taken from here
    parent.names.push(path.subarray(slash + 1));
    if (type === 'd') parent.subdirs.push(path);
  }
  return { walkStartedMs: Number(started[1]!.slice(0, -6) || '0'), folders };
}
