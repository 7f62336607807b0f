import { execFile } from 'node:child_process';
import { lstat, readdir } from 'node:fs/promises';
import { FolderMemo } from '../common/folder-memo.js';
import { SandboxUnavailableError } from '../ports/sandbox.js';

// execFile, not execa: one short `find` with a fixed env and a 1 MiB output cap, which execFile
// gives as well; execa would only add its per-call overhead (about 7 ms measured, see git.ts).
/**
 * Gives the workspace (everything but its `.git`) to the jail's uid so the jailed command can
 * write it. Only entries not already owned are changed; symlinks are changed themselves, never
 * followed (`find -P`, `chown -h`), so a link a task planted cannot redirect the change.
 * Called while no jailed process runs (the previous command's pid namespace is gone). Also
 * gives a setup's package store to its jail (`what`): no `.git` there to skip.
 *
 * With a `memo` (one per workspace and uid), only the folders that changed since the last
 * handover are looked at (see handOverChanged).
 */
export async function handOverWorkspace(dir: string, uid: number, gid: number, what = 'workspace', memo?: HandoverMemo): Promise<void> {
  let walk: Walk;
  try {
    walk = memo ? await changedFolders(dir, memo) : { starts: WHOLE, seen: [] };
  } catch (err) {
    throw failed(dir, uid, what, err);
  }
  await chownWhereNeeded(dir, uid, gid, what, walk.starts);
  // Only once every folder was given: a failed handover leaves nothing remembered as done.
  if (memo) for (const remember of walk.seen) remember();
}

function chownWhereNeeded(dir: string, uid: number, gid: number, what: string, starts: readonly string[]): Promise<void> {
  if (starts.length === 0) return Promise.resolve();
  const whole = starts === WHOLE;
  // Each changed folder and its own entries (depth 1); below them, folders are starts of their own.
  const args = [
    '-P',
    ...starts,
    ...(whole ? [] : ['-maxdepth', '1']),
    '-path',
    './.git',
    '-prune',
    '-o',
    '(',
    '!',
    '-uid',
    String(uid),
    '-o',
    '!',
    '-gid',
    String(gid),
    ')',
    '-exec',
    'chown',
    '-h',
    `${uid}:${gid}`,
    '{}',
    '+',
  ];
  return new Promise((resolve, reject) => {
    execFile('find', args, { cwd: dir, env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' }, maxBuffer: 1024 * 1024 }, (err, _stdout, stderr) => {
      if (err) reject(failed(dir, uid, what, `${String(stderr).trim().split('\n').slice(-3).join(' | ') || err.message}${whole ? '' : ' (the changed folders)'}`));
      else resolve();
    });
  });
}

function failed(dir: string, uid: number, what: string, why: unknown): SandboxUnavailableError {
  return new SandboxUnavailableError(`cannot give the ${what} ${dir} to the sandbox uid ${uid}: ${why instanceof Error ? why.message : String(why)}`);
}

/** What the handovers of one workspace to one uid saw (see changedFolders). */
export class HandoverMemo extends FolderMemo {
  constructor(
    readonly owner: { uid: number; gid: number },
    opts: { racyMs?: number } = {},
  ) {
    super(opts);
  }
}

/** `find`'s starting points for the whole tree. */
const WHOLE: readonly string[] = Object.freeze(['.']);
const PARALLEL = 16;
const SLASH = Buffer.from('/');
const DOT_GIT = Buffer.from('.git');
/** Past this many changed folders (or bytes of their names), one `find` over the whole tree. */
const MAX_STARTS = 2000;
const MAX_START_BYTES = 256 * 1024;

/**
 * The folders whose entries may not all be the jail's any more, as `find` starting points (`.`
 * or `./`-prefixed; WHOLE for the whole tree, `[]` for none). An entry's owner changes only
 * by a chown (the handover's own, which the jail uid cannot undo for another uid) or with a new
 * inode, and putting a new inode in a folder (create, link, rename) changes the folder's ctime:
 * the entries of a folder unchanged since the last handover (FolderMemo) are still the jail's.
 * Every folder is still lstat'ed from the root down. The top-level `.git` is never entered.
 */
interface Walk {
  starts: readonly string[];
  /** What the memo learns, applied once the handover succeeded. */
  seen: Array<() => void>;
}

async function changedFolders(root: string, memo: HandoverMemo): Promise<Walk> {
  const base = Buffer.from(root);
  const started = Date.now();
  const changed: Buffer[] = [];
  const seen: Walk['seen'] = [];
  let frontier: Buffer[] = [Buffer.alloc(0)];
  while (frontier.length > 0) {
    const next: Buffer[] = [];
    for (let i = 0; i < frontier.length; i += PARALLEL) {
      await Promise.all(
        frontier.slice(i, i + PARALLEL).map(async (rel) => {
          const dir = rel.length > 0 ? Buffer.concat([base, SLASH, rel]) : base;
          // Stat first: the folder read after it is at least as new as what is remembered.
          const stat = await lstat(dir, { bigint: true });
          if (!stat.isDirectory()) throw new Error(`${dir.toString()} is no longer a folder`);
          const known = memo.unchanged(rel, stat);
          if (known) {
            next.push(...known);
            return;
          }
          changed.push(rel);
          const subdirs: Buffer[] = [];
          for (const e of await readdir(dir, { withFileTypes: true, encoding: 'buffer' })) {
            if (rel.length === 0 && e.name.equals(DOT_GIT)) continue;
            if (e.isDirectory()) subdirs.push(rel.length > 0 ? Buffer.concat([rel, SLASH, e.name]) : e.name);
          }
          next.push(...subdirs);
          // Owned already: its ctime stays as seen. If `find` gives it over, the next walk reads it again.
          if (Number(stat.uid) === memo.owner.uid && Number(stat.gid) === memo.owner.gid) seen.push(() => memo.remember(rel, stat, subdirs, started));
          else seen.push(() => memo.forget(rel));
        }),
      );
    }
    frontier = next;
  }
  const done = (found: readonly string[]): Walk => ({ starts: found, seen });
  if (changed.length === 0) return done([]);
  if (changed.length > MAX_STARTS) return done(WHOLE);
  const starts = changed.map((rel) => (rel.length > 0 ? `./${rel.toString('utf8')}` : '.'));
  // A name that is not UTF-8 cannot be passed as an argument unchanged: the whole tree then.
  if (changed.some((rel, i) => rel.length > 0 && !Buffer.from(starts[i]!.slice(2), 'utf8').equals(rel))) return done(WHOLE);
  if (starts.reduce((n, s) => n + s.length + 1, 0) > MAX_START_BYTES) return done(WHOLE);
  return done(starts);
}
