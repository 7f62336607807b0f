/**
 * What a walk of one tree saw, folder by folder: a folder whose inode and ctime are those it had
 * when it was read holds the same entries (adding, removing or renaming an entry changes its
 * ctime, and no program can set a ctime), so it need not be read again: only what changed since
 * is. Every folder is still stat'ed, from the root down, each walk. ctime moves in clock ticks (up
 * to a second on some filesystems): a folder whose ctime is less than `racyMs` older than the walk
 * is not remembered (git's "racily clean" rule), since a change in the same tick would keep it.
 * A ctime with a fraction of a second comes from a filesystem whose ticks are the kernel's (a few
 * milliseconds): for it the window is 100 ms at most, so a folder written a moment ago (by the
 * previous command, or a checkpoint) is remembered at the next walk but one, not 2 s later.
 * Used by the nested-repository search and by the jail's workspace handover.
 */
/** The racy window on a filesystem with sub-second ctimes (see above). */
const FINE_RACY_NS = 100_000_000n;

export class FolderMemo {
  private readonly dirs = new Map<string, { ino: bigint; ctime: bigint; subdirs: Buffer[] }>();
  /** Folders read (not taken from memory) so far. */
  reads = 0;
  private readonly racyNs: bigint;

  constructor(opts: { racyMs?: number } = {}) {
    this.racyNs = BigInt(opts.racyMs ?? 2000) * 1_000_000n;
  }

  /** The remembered subfolders of `rel` when it is the folder read before and unchanged since. */
  unchanged(rel: Buffer, stat: { ino: bigint; ctimeNs: bigint; isDirectory(): boolean }): Buffer[] | undefined {
    const known = this.dirs.get(rel.toString('latin1'));
    if (!known || !stat.isDirectory() || known.ino !== stat.ino || known.ctime !== stat.ctimeNs) return undefined;
    return known.subdirs;
  }

  /** `stat` must be taken before the folder was read: what is remembered is never newer than what was seen. */
  remember(rel: Buffer, stat: { ino: bigint; ctimeNs: bigint }, subdirs: Buffer[], walkStartedMs: number): void {
    this.reads++;
    this.learn(rel, stat, subdirs, walkStartedMs);
  }

  /** Like `remember`, for a folder another walk read (the same rule: never newer than what was seen). */
  protected learn(rel: Buffer, stat: { ino: bigint; ctimeNs: bigint }, subdirs: Buffer[], walkStartedMs: number): void {
    const window = stat.ctimeNs % 1_000_000_000n === 0n || this.racyNs < FINE_RACY_NS ? this.racyNs : FINE_RACY_NS;
    if (stat.ctimeNs >= BigInt(walkStartedMs) * 1_000_000n - window) {
      this.dirs.delete(rel.toString('latin1'));
      return;
    }
    this.dirs.set(rel.toString('latin1'), { ino: stat.ino, ctime: stat.ctimeNs, subdirs });
  }

  /** The folder is read again at the next walk (e.g. its own ctime changed by the walk). */
  forget(rel: Buffer): void {
    this.dirs.delete(rel.toString('latin1'));
  }

  /** Every folder is read again at the next walk. */
  clear(): void {
    this.dirs.clear();
  }
}
