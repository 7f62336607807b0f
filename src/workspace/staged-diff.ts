import type { DiffStat } from '../ports/workspace.js';

/** A checkpoint names at most this many of its files (the counts cover all). */
const MAX_STAT_PATHS = 50;

/** One raw entry: the path, its new mode and its status letter (A, M, D, T; no renames). */
export interface StagedEntry {
  newMode: string;
  status: string;
  path: string;
}

/**
 * `git diff --cached --raw --numstat -z`: each staged path with its new mode and status (the raw
 * entries, `:<old mode> <new mode> <old> <new> <status>\0<path>\0`), then the diffstat (the numstat ones).
 */
export function parseStagedDiff(out: string): { staged: StagedEntry[]; stat: DiffStat } {
  const parts = out.split('\0');
  const staged: StagedEntry[] = [];
  let i = 0;
  for (; i + 1 < parts.length && parts[i]!.startsWith(':'); i += 2) {
    const fields = parts[i]!.slice(1).split(' ');
    staged.push({ newMode: fields[1] ?? '', status: (fields[4] ?? '').charAt(0), path: parts[i + 1]! });
  }
  const stat: DiffStat = { files: 0, insertions: 0, deletions: 0, paths: [] };
  for (; i < parts.length; i++) {
    const m = /^(\d+|-)\t(\d+|-)\t([\s\S]+)$/.exec(parts[i]!);
    if (!m) continue;
    const [added, deleted] = [m[1] === '-' ? null : Number(m[1]), m[2] === '-' ? null : Number(m[2])];
    stat.files++;
    stat.insertions += added ?? 0;
    stat.deletions += deleted ?? 0;
    if (stat.paths.length < MAX_STAT_PATHS) stat.paths.push({ path: m[3]!, added, deleted });
  }
  return { staged, stat };
}
