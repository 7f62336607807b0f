import { type BigIntStats, lstatSync } from 'node:fs';
import { chmod, readdir, rm } from 'node:fs/promises';
import { FolderMemo } from '../common/folder-memo.js';
import { CheckpointRefusedError } from '../ports/workspace.js';
import type { FolderListing } from './folder-listing.js';

/**
 * A `.git` below the workspace root (a directory, a gitfile or a symlink), or a folder laid out
 * as a bare repository. Git treats the folder holding it as a repository of its own and, for
 * `add`, starts a git process there that reads *that* repository's config: its filters would
 * run on the host, as the bot. None may exist when the bot's git runs.
 */
export class NestedRepositoryError extends CheckpointRefusedError {
  override name = 'NestedRepositoryError';
  constructor(readonly paths: string[]) {
    super(
      `nested git repositories are not allowed in the workspace (${paths.slice(0, 5).join(', ')}${paths.length > 5 ? ', …' : ''}): ` +
        'goal-loop never runs git inside a repository that a task or a repository created. ' +
        'Leave no `.git`, and no folder laid out as a bare repository (HEAD, objects/, refs/), below the repository root (vendor the files instead, or add the dependency as a package).',
    );
  }
}

const PARALLEL = 16;
/** Folders stat'ed synchronously between two turns of the event loop. */
const SYNC_SLICE = 512;
const DOT_GIT = Buffer.from('.git');
const SLASH = Buffer.from('/');
// What git's is_git_directory (setup.c) needs to take a folder for a repository: HEAD, refs and
// objects (or a commondir file naming them). Names only, whatever their type: git follows symlinks.
const HEAD = Buffer.from('HEAD');
const REFS = Buffer.from('refs');
const OBJECTS = [Buffer.from('objects'), Buffer.from('commondir')];

function looksLikeGitDir(names: Buffer[]): boolean {
  return names.some((n) => n.equals(HEAD)) && names.some((n) => n.equals(REFS)) && names.some((n) => OBJECTS.some((o) => n.equals(o)));
}

/**
 * Every `.git` entry below `root` (not the root's own), and every folder below it laid out as a
 * bare repository, as raw byte paths relative to it. Names
 * stay bytes end to end: a folder whose name is not UTF-8 must be searched like any other (as a
 * string it would name a path that does not exist). Symlinks are never followed. Ignored
 * folders are searched too: a rule in `.gitignore` is the repository's word, not ours. Any
 * error fails the search: nothing else writes the tree while it runs, so a folder that cannot
 * be read is a folder someone hid.
 *
 * With a memo, each level's folders are stat'ed first, synchronously and a slice at a time (a
 * stat costs microseconds; through the thread pool, tens): those it remembers unchanged are not
 * read. Only the rest are read, in parallel.
 */
async function findNested(root: string, skip: readonly string[] = [], memo?: NestedScanMemo): Promise<Buffer[]> {
  const found: Buffer[] = [];
  const skipped = skip.map((p) => Buffer.from(p));
  let frontier: Buffer[] = [Buffer.alloc(0)];
  const base = Buffer.from(root);
  const pathOf = (rel: Buffer) => (rel.length > 0 ? Buffer.concat([base, SLASH, rel]) : base);
  const started = Date.now();
  while (frontier.length > 0) {
    const next: Buffer[] = [];
    const unknown: Array<{ rel: Buffer; stat: BigIntStats | undefined }> = [];
    for (const [i, rel] of frontier.entries()) {
      if (!memo) {
        unknown.push({ rel, stat: undefined });
        continue;
      }
      if (i > 0 && i % SYNC_SLICE === 0) await new Promise((r) => setImmediate(r));
      // Stat first: the folder read after it is at least as new as what is remembered.
      const stat = lstatSync(pathOf(rel), { bigint: true });
      const seen = memo.unchanged(rel, stat);
      if (seen) {
        for (const sub of seen) if (!skipped.some((s) => s.equals(sub))) next.push(sub);
      } else unknown.push({ rel, stat });
    }
    for (let i = 0; i < unknown.length; i += PARALLEL) {
      await Promise.all(
        unknown.slice(i, i + PARALLEL).map(async ({ rel, stat }) => {
          const entries = await readBytes(pathOf(rel));
          if (rel.length > 0 && looksLikeGitDir(entries.map((e) => e.name))) {
            found.push(rel);
            return; // the whole folder goes (or is refused); nothing below it matters
          }
          const subdirs: Buffer[] = [];
          let clean = true;
          for (const e of entries) {
            const path = rel.length > 0 ? Buffer.concat([rel, SLASH, e.name]) : e.name;
            if (e.name.equals(DOT_GIT)) {
              if (rel.length > 0) {
                found.push(path);
                clean = false;
              }
            } else if (e.isDirectory()) {
              subdirs.push(path);
              if (!skipped.some((s) => s.equals(path))) next.push(path);
            }
          }
          if (stat && clean) memo!.remember(rel, stat, subdirs, started);
        }),
      );
    }
    frontier = next;
  }
  return found.sort(Buffer.compare);
}

/** What the nested-repository search of one workspace saw (see FolderMemo): only what changed since is read. */
export class NestedScanMemo extends FolderMemo {
  /**
   * Takes from a listing of folders now below the workspace (a ready copy the host moved in) those
   * the search itself would have remembered: no `.git` entry, not laid out as a repository.
   */
  adopt(listing: FolderListing): void {
    for (const [rel, folder] of listing.folders) {
      if (folder.names.some((n) => n.equals(DOT_GIT)) || looksLikeGitDir(folder.names)) continue;
      this.learn(Buffer.from(rel, 'latin1'), folder, folder.subdirs, listing.walkStartedMs);
    }
  }
}

/** A folder's entries, names as bytes; one that its owner made unreadable is opened up first. */
async function readBytes(dir: Buffer): Promise<Array<{ name: Buffer; isDirectory(): boolean }>> {
  try {
    return await readdir(dir, { withFileTypes: true, encoding: 'buffer' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EACCES') throw err;
    // A task may chmod 000 a folder it owns (the bot's own uid when the bot is not root).
    await chmod(dir, 0o755);
    return readdir(dir, { withFileTypes: true, encoding: 'buffer' });
  }
}

/** For messages: bytes that are not UTF-8 shown as escapes, never as a lookalike. */
function display(path: Buffer): string {
  let out = '';
  for (const byte of path) out += byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
  return out;
}

/** Every nested `.git` below `root`, for messages. */
export async function findNestedGitEntries(root: string): Promise<string[]> {
  return (await findNested(root)).map(display);
}

/**
 * Refuses a tree holding a nested repository. `known` (relative folders) are not searched: only
 * for what the host itself just put there from its own cache, searched when it was saved, with
 * nothing run in between (setup output restored from the setup cache).
 */
export async function refuseNestedRepositories(root: string, known: readonly string[] = [], memo?: NestedScanMemo): Promise<void> {
  const found = await findNested(root, known, memo);
  if (found.length > 0) throw new NestedRepositoryError(found.map(display));
}

/** Deletes every nested `.git` (before a rollback's git runs); returns what it removed. */
export async function removeNestedRepositories(root: string, memo?: NestedScanMemo): Promise<string[]> {
  const found = await findNested(root, [], memo);
  for (const rel of found) await rm(Buffer.concat([Buffer.from(root), SLASH, rel]), { recursive: true, force: true });
  return found.map(display);
}
