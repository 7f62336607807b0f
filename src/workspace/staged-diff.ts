import type { DiffStat } from '../ports/workspace.js';

/** A checkpoint names at most this many of its files (the counts cover all). */
const MAX_STAT_PATHS = 50;

/**
 * `git diff --cached --raw --numstat -z`: each staged path with its new mode (the raw entries,
 * `:<old mode> <new mode> <old> <new> <status>\0<path>\0`), then the diffstat (the numstat ones).
 */
export function parseStagedDiff(out: string): { staged: Array<{ newMode: string; path: string }>; stat: DiffStat } {
  const parts = out.split('\0');
  const staged: Array<{ newMode: string; path: string }> = [];
  let i = 0;
  for (; i + 1 < parts.length && parts[i]!.startsWith(':'); i += 2) {
    staged.push({ newMode: parts[i]!.slice(1).split(' ')[1] ?? '', path: parts[i + 1]! });
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
